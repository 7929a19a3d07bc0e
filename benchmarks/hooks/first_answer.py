"""The first answer as fast as the hundredth: what a new process pays for a recall, and warm recall.

Issue 32's figures in one run, with the default model (ONNX, learned ranking on):

* ``cli``   -- a new ``python -m localmem --db DB recall QUERY --json`` process on the LoCoMo
  store (the five dev conversations, ~2,760 turns) and, with ``--big-db``, on a copy of a
  large store (scale.py's 100k); learned ranking on against ``LOCALMEM_LEARNED_RANK=0``,
  the two run back to back in pairs (the ratio is taken pair by pair); wall and CPU seconds.
* ``mcp``   -- spawn ``python -m localmem mcp`` -> MCP handshake -> the first
  ``recall_memory`` answer, through the official SDK's stdio client.
* ``serve`` -- ``localmem serve`` started -> ``/health`` answers -> the first ``GET /recall``,
  against the median of the next recalls (same query) of that server.
* ``warm``  -- in one process, every LoCoMo question asked with its text (so the query
  embedding is timed) scoped to its conversation's tag, limit 20: p50 / p95 / mean.
* ``warm10k`` -- the same on a copy of scale.py's cached 10k store (built by scale.py when
  missing; relabelled ``all-MiniLM-L6-v2``, see ``--big-db-model``), its workload's query texts
  with their modes' parameters (plain, tags, time windows, expand_relations), limit 10.

New processes run with Python's bytecode cache (``PYTHONDONTWRITEBYTECODE`` removed), as an
installed package has it. Every store is a copy in a temporary folder; ``LOCALMEM_TRACK_ACCESS=0``.
The ONNX export lives in ``--cache-dir`` (made once, as ``cold_start.py`` does).

    python benchmarks/hooks/first_answer.py [--runs 7] [--big-db PATH] [--only cli,mcp,serve,warm] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.hooks.cold_start import MODEL, ensure_export, environment  # noqa: E402
from benchmarks.quality.locomo import DEFAULT_DATA, memory_item, questions_of, turns_of  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402
from serving import wait_until_healthy  # noqa: E402  (tests/serving.py)

QUERY = "what did Caroline research?"
SECTIONS = ("cli", "mcp", "serve", "warm", "warm10k")


def child_env(cache: Path) -> dict[str, str]:
    env = environment(cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["LOCALMEM_TRACK_ACCESS"] = "0"
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process run to its end; SystemExit when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(ROOT), check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def locomo_store(path: Path, say) -> list[dict[str, Any]]:
    """The five dev conversations, one memory per turn (as locomo.py builds them, default
    embedder); returns their questions with their conversation tags."""
    from localmem import MemoryStore

    data = json.loads(Path(DEFAULT_DATA).read_text(encoding="utf-8"))
    questions = []
    say(f"building the LoCoMo store at {path} (default embedder)...")
    with MemoryStore(str(path)) as store:
        for index, sample in enumerate(data):
            turns = turns_of(sample)
            store.store_many([memory_item(t, index) for t in turns], batch_size=128)
            for q in questions_of(sample, {t["dia_id"] for t in turns}):
                questions.append({"question": q["question"], "tag": f"conv:{index}"})
    return questions


def cli_pairs(db: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "localmem", "--db", str(db), "recall", QUERY, "--json"]
    off_env = dict(env, LOCALMEM_LEARNED_RANK="0")
    timed(argv, env)  # warm the OS file cache and the query graph (built once per export)
    on, off = [], []
    for _ in range(runs):
        on.append(timed(argv, env))
        off.append(timed(argv, off_env))
    return {"on_wall": [w for w, _ in on], "on_cpu": [c for _, c in on],
            "off_wall": [w for w, _ in off], "off_cpu": [c for _, c in off],
            "ratio": [a[0] / b[0] for a, b in zip(on, off)]}


async def _mcp_first_answer(db: Path, env: dict[str, str]) -> float:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "localmem", "--db", str(db), "mcp"],
                                   env=env, cwd=str(ROOT))
    started = time.perf_counter()
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        result = await client.call_tool("recall_memory", {"query": QUERY, "limit": 10})
        elapsed = time.perf_counter() - started
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise SystemExit(f"recall_memory failed: {result}")
    return elapsed


def mcp_runs(db: Path, env: dict[str, str], runs: int) -> list[float]:
    asyncio.run(_mcp_first_answer(db, env))  # not counted: the OS file cache
    return [asyncio.run(_mcp_first_answer(db, env)) for _ in range(runs)]


def serve_runs(db: Path, env: dict[str, str], runs: int, warm: int = 9) -> dict[str, list[float]]:
    import httpx

    first, warm_medians = [], []
    for _ in range(runs):
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "serve", "--port", str(port)],
                                   env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(process, url, seconds=60)
            times = []
            with httpx.Client(base_url=url, timeout=60) as client:
                for _ in range(1 + warm):
                    started = time.perf_counter()
                    response = client.get("/recall", params={"query": QUERY, "limit": 10})
                    times.append(time.perf_counter() - started)
                    response.raise_for_status()
            first.append(times[0])
            warm_medians.append(statistics.median(times[1:]))
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return {"first": first, "warm": warm_medians}


def warm_recalls(db: Path, questions: list[dict[str, Any]], rounds: int) -> list[float]:
    from localmem import Config, MemoryStore

    times = []
    with MemoryStore(str(db), config=Config(track_access=False)) as store:
        for q in questions[:20]:  # not counted: loads the models
            store.recall(q["question"], tags=[q["tag"]], limit=20, adaptive_floor=False)
        for _ in range(rounds):
            for q in questions:
                started = time.perf_counter()
                store.recall(q["question"], tags=[q["tag"]], limit=20, adaptive_floor=False)
                times.append((time.perf_counter() - started) * 1000)
    return times


def warm_10k(folder: Path, say, count: int = 200) -> list[float]:
    """Warm recalls with query text on a copy of scale.py's 10k store (ms)."""
    from benchmarks.speed import scale
    from localmem import Config, MemoryStore

    source, _info = scale.cached(10_000, False, say)
    copy = folder / "scale-10k.db"
    shutil.copyfile(source, copy)
    relabel(copy, MODEL)
    times = []
    with MemoryStore(str(copy), config=Config(track_access=False)) as store:
        queries = [kwargs for _mode, kwargs, _vector in scale.workload(store, count)]
        for kwargs in queries[:20]:  # not counted: loads the models
            store.recall(**kwargs)
        for kwargs in queries:
            started = time.perf_counter()
            store.recall(**kwargs)
            times.append((time.perf_counter() - started) * 1000)
    return times


def relabel(path: Path, model: str) -> None:
    import apsw

    conn = apsw.Connection(str(path))
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (model,))
    conn.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def render(results: dict[str, Any], command: str, load: tuple[float, float]) -> str:
    lines = ["## The first answer as fast as the hundredth (issue 32)", "",
             f"Command: `{command}`  ",
             f"Date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; localmem git {git_revision()}; "
             f"Python {platform.python_version()}; `nproc` = {os.cpu_count()}; 1-minute load average "
             f"{load[0]:.1f} at the start, {load[1]:.1f} at the end.", ""]
    med = statistics.median
    for name, row in results.get("cli", {}).items():
        lines.append(f"- **Fresh CLI recall, {name}** (`python -m localmem --db DB recall QUERY --json`, "
                     f"{len(row['ratio'])} pairs): learned ranking on {med(row['on_wall']):.3f} s wall "
                     f"({med(row['on_cpu']):.3f} s CPU), off {med(row['off_wall']):.3f} s "
                     f"({med(row['off_cpu']):.3f} s CPU); on ÷ off per pair: median "
                     f"{med(row['ratio']):.2f} (min {min(row['ratio']):.2f}, max {max(row['ratio']):.2f}).")
    if "mcp" in results:
        values = results["mcp"]
        lines.append(f"- **MCP**: spawn → handshake → first `recall_memory` answer: median {med(values):.3f} s "
                     f"(min {min(values):.3f}, max {max(values):.3f}; {len(values)} runs).")
    if "serve" in results:
        row = results["serve"]
        extra = [f - w for f, w in zip(row["first"], row["warm"])]
        lines.append(f"- **`localmem serve`**: first `/recall` after `/health` answers: median "
                     f"{med(row['first']) * 1000:.0f} ms against its warm recall {med(row['warm']) * 1000:.0f} ms: "
                     f"{med(extra) * 1000:.0f} ms beyond it ({len(extra)} servers).")
    if "warm" in results:
        values = results["warm"]
        lines.append(f"- **Warm recall, query text in** (LoCoMo store, each question scoped to its conversation, "
                     f"limit 20, embedding included; {len(values)} recalls): p50 {pct(values, 0.5):.1f} ms, "
                     f"p95 {pct(values, 0.95):.1f} ms, mean {statistics.fmean(values):.1f} ms.")
    if "warm10k" in results:
        values = results["warm10k"]
        lines.append(f"- **Warm recall, query text in, 10k store** (scale.py's 10k store relabelled "
                     f"{MODEL}, its workload's {len(values)} queries in five modes, limit 10, embedding "
                     f"included): p50 {pct(values, 0.5):.1f} ms, p95 {pct(values, 0.95):.1f} ms.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs (pairs, servers) per case (default 7)")
    parser.add_argument("--rounds", type=int, default=2, help="warm: rounds over the questions (default 2)")
    parser.add_argument("--big-db", type=Path, help="also time the CLI on a copy of this large store")
    parser.add_argument("--big-db-model", metavar="MODEL",
                        help="record MODEL as the copy's embedder (scale.py's stores record 'hash' though "
                             "their vectors are mixtures of MiniLM embeddings)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {','.join(SECTIONS)}")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "benchmarks" / ".cache" / "cold-start",
                        help="ONNX cache (default benchmarks/.cache/cold-start)")
    parser.add_argument("--write", action="store_true", help="also update docs/results/history.md")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown or args.runs < 1:
        parser.error(f"unknown sections {unknown}" if unknown else "--runs must be at least 1")
    load_start = os.getloadavg()[0]

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    env = child_env(cache)
    ensure_export(cache, env, say)
    os.environ.update(LOCALMEM_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1", LOCALMEM_ONNX_EXPORT="0")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="localmem-first-answer-") as folder:
        db = Path(folder) / "locomo.db"
        questions = locomo_store(db, say)
        if "cli" in sections:
            say("cli: LoCoMo store...")
            results["cli"] = {f"LoCoMo store ({len(questions)} questions' conversations, ~2,760 memories)":
                              cli_pairs(db, env, args.runs)}
            if args.big_db is not None:
                big = Path(folder) / "big.db"
                say(f"cli: copying {args.big_db}...")
                shutil.copyfile(args.big_db, big)
                if args.big_db_model:
                    relabel(big, args.big_db_model)
                results["cli"][f"{args.big_db.name}"] = cli_pairs(big, env, args.runs)
        if "mcp" in sections:
            say("mcp...")
            results["mcp"] = mcp_runs(db, env, args.runs)
        if "serve" in sections:
            say("serve...")
            results["serve"] = serve_runs(db, env, args.runs)
        if "warm" in sections:
            say("warm...")
            results["warm"] = warm_recalls(db, questions, args.rounds)
        if "warm10k" in sections:
            say("warm10k...")
            results["warm10k"] = warm_10k(Path(folder), say)
    command = "python benchmarks/hooks/first_answer.py" + (f" {' '.join(argv if argv is not None else sys.argv[1:])}")
    body = render(results, command.strip(), (load_start, os.getloadavg()[0]))
    print(body)
    if args.write:
        write_section("first-answer", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
