"""What ``/mcp`` costs ``localmem serve``'s start: time to a healthy server, two source trees paired.

Each round starts ``python -m localmem --db DB serve`` once per arm, in an order that alternates
round by round, and times process start -> ``GET /health`` answers 200. The arms:

* ``before`` -- the source tree given by ``--before`` (or ``--before-rev``, extracted with
  ``git archive``): the server without ``/mcp``;
* ``after``  -- this tree: ``/mcp`` mounted, the MCP SDK imported by the first ``/mcp`` request;
* ``eager``  -- this tree with the SDK imported before the server starts (what importing it at
  startup would cost), by a ``-c`` wrapper that imports ``localmem.mcp_server.streamable`` and
  then runs the CLI.

For ``after`` the first and the second ``tools/list`` over ``/mcp`` (plain JSON-RPC POSTs,
stateless) are timed as well: the first pays the SDK's import. The store is a copy of the first
LoCoMo conversation with the default model (ONNX from ``--cache-dir``), so the warm-up thread
loads the real model while the server starts, as it does for users. Ratios are per round
(after/before, eager/before), then their median.

    python benchmarks/hooks/serve_start.py --before-rev REV [--runs 7] [--data LOCOMO.json] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.hooks.cold_start import ensure_export  # noqa: E402
from benchmarks.hooks.first_answer import child_env, free_port  # noqa: E402
from benchmarks.quality.locomo import DEFAULT_DATA, memory_item, turns_of  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402

EAGER = ("import sys, localmem.mcp_server.streamable; from localmem.cli import main; "
         "sys.exit(main(sys.argv[1:]))")
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def build_store(path: Path, data: Path, say) -> int:
    from localmem import MemoryStore

    sample = json.loads(data.read_text(encoding="utf-8"))[0]
    turns = turns_of(sample)
    say(f"building a {len(turns)}-memory store (default embedder) at {path}...")
    with MemoryStore(str(path)) as store:
        store.store_many([memory_item(t, 0) for t in turns], batch_size=128)
    return len(turns)


def start_once(argv: list[str], env: dict[str, str], *, mcp: bool) -> dict[str, float]:
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    process = subprocess.Popen([*argv, "serve", "--port", str(port), "--log-level", "warning"], env=env,
                               cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    timings: dict[str, float] = {}
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            deadline = started + 60
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"server exited: {process.stderr.read().decode()[-2000:]}")
                try:
                    if client.get("/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() > deadline:
                    raise SystemExit("server did not start")
                time.sleep(0.005)
            timings["healthy"] = time.perf_counter() - started
            if mcp:
                for name in ("mcp_first", "mcp_second"):
                    began = time.perf_counter()
                    response = client.post("/mcp", json=TOOLS_LIST, headers=MCP_HEADERS)
                    timings[name] = time.perf_counter() - began
                    if response.status_code != 200 or len(response.json()["result"]["tools"]) != 6:
                        raise SystemExit(f"/mcp tools/list failed: {response.status_code} {response.text[:300]}")
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return timings


def arms(before: Path, db: Path, base_env: dict[str, str]) -> dict[str, tuple[list[str], dict[str, str]]]:
    def env_for(tree: Path) -> dict[str, str]:
        return {**base_env, "PYTHONPATH": str(tree)}

    common = ["--db", str(db)]
    return {
        "before": ([sys.executable, "-m", "localmem", *common], env_for(before)),
        "after": ([sys.executable, "-m", "localmem", *common], env_for(ROOT)),
        "eager": ([sys.executable, "-c", EAGER, *common], env_for(ROOT)),
    }


def render(rows: dict[str, list[dict[str, float]]], command: str, loads: tuple[float, float], memories: int,
           before: str) -> str:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    healthy = {arm: [r["healthy"] for r in rs] for arm, rs in rows.items()}
    ratio = {arm: med([a / b for a, b in zip(healthy[arm], healthy["before"])]) for arm in ("after", "eager")}
    first = [r["mcp_first"] for r in rows["after"]]
    second = [r["mcp_second"] for r in rows["after"]]
    return "\n".join([
        "## MCP over HTTP: what /mcp costs `localmem serve`'s start",
        "",
        f"`{command}` at {git_revision()} against {before}; {len(healthy['before'])} rounds, arms in "
        f"alternating order; a {memories}-memory LoCoMo store, default model (ONNX); load average "
        f"{loads[0]:.2f} -> {loads[1]:.2f} (shared 2-core machine: read the ratios, not the seconds).",
        "",
        "| arm | start -> /health 200, median | ratio to before (median of rounds) |",
        "|---|---|---|",
        f"| before (no /mcp) | {med(healthy['before']) * 1000:.0f} ms | 1 |",
        f"| after (/mcp, SDK imported on first /mcp request) | {med(healthy['after']) * 1000:.0f} ms "
        f"| {ratio['after']:.3f} |",
        f"| eager (SDK imported before serving) | {med(healthy['eager']) * 1000:.0f} ms | {ratio['eager']:.3f} |",
        "",
        f"First `tools/list` over /mcp (pays the SDK import): median {med(first) * 1000:.0f} ms; the second: "
        f"{med(second) * 1000:.1f} ms.",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="source tree of the server without /mcp")
    parser.add_argument("--before-rev", metavar="REV", help="or a git revision of this repository, extracted")
    parser.add_argument("--runs", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "benchmarks" / ".cache" / "cold-start",
                        help="ONNX cache (default benchmarks/.cache/cold-start)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"LoCoMo data (default {DEFAULT_DATA})")
    parser.add_argument("--write", action="store_true", help="also update docs/results/history.md")
    args = parser.parse_args(argv)
    if (args.before is None) == (args.before_rev is None) or args.runs < 1:
        parser.error("give one of --before or --before-rev, and --runs of at least 1")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    load_start = os.getloadavg()[0]
    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    env = child_env(cache)
    ensure_export(cache, env, say)
    os.environ.update(LOCALMEM_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1", LOCALMEM_ONNX_EXPORT="0")
    with tempfile.TemporaryDirectory(prefix="localmem-serve-start-") as folder:
        before = args.before
        if before is None:
            before = Path(folder) / "before"
            before.mkdir()
            archive = subprocess.run(["git", "archive", args.before_rev], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        db = Path(folder) / "store.db"
        memories = build_store(db, args.data, say)
        runs = arms(before.resolve(), db, env)
        rows: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
        for name, (argv_, env_) in runs.items():  # not counted: the OS file cache, bytecode
            start_once(argv_, env_, mcp=name == "after")
        for round_ in range(args.runs):
            order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
            for name in order:
                argv_, env_ = runs[name]
                rows[name].append(start_once(argv_, env_, mcp=name == "after"))
            say(f"round {round_ + 1}: " + ", ".join(f"{n} {rows[n][-1]['healthy'] * 1000:.0f} ms" for n in runs))
    command = "python benchmarks/hooks/serve_start.py " + " ".join(argv if argv is not None else sys.argv[1:])
    body = render(rows, command.strip(), (load_start, os.getloadavg()[0]), memories,
                  str(args.before) if args.before else f"`{args.before_rev}`")
    print(body)
    if args.write:
        write_section("serve-start-mcp", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
