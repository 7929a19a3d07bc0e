"""What a client pays per call with and without the store's warm process (issue 44).

On a copy of scale.py's cached 10k store (relabelled to the default model, so every process
loads MiniLM through the ONNX export, as a user's does), each client is timed as a whole new
process, the way an assistant runs it:

* ``hook``  -- the command ``localmem hooks install`` writes (``python -S .../fast_client.py
  --db DB hook UserPromptSubmit``), through ``sh -c`` as Claude Code runs it, with a prompt on
  stdin (a new session each); with the warm process running, the console script
  ``localmem --db DB hook UserPromptSubmit`` is timed in the same rounds too;
* ``cli``   -- ``localmem recall QUERY --json``;
* ``mcp``   -- spawn ``localmem mcp`` -> MCP handshake -> the first ``recall_memory`` answer
  (the official SDK's stdio client).

Three states: ``off`` (``LOCALMEM_DAEMON=0``: in-process, as before issue 44), ``first``
(no warm process yet: this call answers in-process and starts one after answering; then the
time until the warm process answers is taken as ``start``), and ``warm`` (it runs). ``off`` and
``warm`` runs alternate pair by pair, so both see the same machine load; the ratio is taken per
pair; ``python -c pass`` and ``python -S -c pass`` are timed in each round too (the floor of any
new process, with and without this venv's ``site``), so a loaded machine can be read. Prompts and
queries are scale.py's workload texts. Every file is in a temporary folder.

    python benchmarks/hooks/daemon_latency.py [--runs 20] [--mcp-runs 4] [--only hook,cli,mcp]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
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

from benchmarks.hooks.cold_start import MODEL, ensure_export, environment  # noqa: E402
from benchmarks.hooks.first_answer import relabel  # noqa: E402


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def row(name: str, values: list[float]) -> str:
    return (f"| {name} | {len(values)} | {pct(values, 0.5) * 1000:.0f} | {pct(values, 0.95) * 1000:.0f} | "
            f"{statistics.fmean(values) * 1000:.0f} |")


def run(argv: list[str] | str, env: dict[str, str], stdin: str = "") -> float:
    """One whole process's wall time (a string: a shell command line, as an assistant runs hooks)."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=str(ROOT), check=False,
                          shell=isinstance(argv, str))
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {argv}\n{done.stderr[-2000:]}")
    return wall


def program(env: dict[str, str]) -> list[str]:
    """The console script ``localmem``, else ``python -m localmem``."""
    script = Path(sys.executable).parent / "localmem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "localmem"]


def stop(env: dict[str, str], db: Path) -> None:
    subprocess.run([*program(env), "--db", str(db), "daemon", "stop"], env=env, capture_output=True, check=False)


def wait_warm(env: dict[str, str], db: Path, since: float) -> float:
    while time.perf_counter() - since < 300:
        done = subprocess.run([*program(env), "--db", str(db), "daemon", "status", "--json"], env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return time.perf_counter() - since
        time.sleep(0.05)
    raise SystemExit("the warm process did not start within 300 s")


async def _mcp(db: Path, env: dict[str, str], query: str) -> float:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=program(env)[0], args=[*program(env)[1:], "--db", str(db), "mcp"],
                                   env=env, cwd=str(ROOT))
    started = time.perf_counter()
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        result = await client.call_tool("recall_memory", {"query": query, "limit": 10})
        elapsed = time.perf_counter() - started
    if result.is_error:
        raise SystemExit(f"recall_memory failed: {result}")
    return elapsed


@functools.lru_cache(maxsize=None)
def installed_hook(db: Path) -> str:
    """The UserPromptSubmit command ``hooks install`` writes for ``db`` (a shell command line)."""
    done = subprocess.run([*program({}), "--db", str(db), "hooks", "install", "claude-code", "--print"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]


def client_argv(kind: str, env: dict[str, str], db: Path, text: str, number: int) -> tuple[list[str] | str, str]:
    if kind in ("hook", "hook-script"):
        payload = {"session_id": f"bench-{number}", "prompt": text, "cwd": "/", "hook_event_name": "UserPromptSubmit"}
        if kind == "hook":
            return installed_hook(db) + " --deadline 60", json.dumps(payload)
        return [*program(env), "--db", str(db), "hook", "UserPromptSubmit", "--deadline", "60"], json.dumps(payload)
    return [*program(env), "--db", str(db), "recall", text, "--json"], ""


def measure(kind: str, db: Path, env: dict[str, str], texts: list[str], runs: int) -> dict[str, list[float]]:
    off_env = dict(env, LOCALMEM_DAEMON="0")
    out: dict[str, list[float]] = {"off": [], "first": [], "start": [], "warm": [], "script": [], "answer": [],
                                   "floor": [], "floor_s": []}
    if kind == "mcp":
        asyncio.run(_mcp(db, off_env, texts[0]))  # the OS file cache, the SDK's bytecode
        for index in range(runs):
            stop(env, db)
            started = time.perf_counter()
            out["first"].append(asyncio.run(_mcp(db, env, texts[index])))
            out["start"].append(wait_warm(env, db, started))
            asyncio.run(_mcp(db, env, texts[index]))  # not timed: the warm process's first MCP line
            for extra in range(3):  # builds its SDK server, if its start-up has not yet
                out["warm"].append(asyncio.run(_mcp(db, env, texts[index + 1 + extra])))
            out["off"].append(asyncio.run(_mcp(db, off_env, texts[index + 4])))
        return out
    argv, stdin = client_argv(kind, env, db, texts[0], 0)
    run(argv, off_env, stdin)  # the OS file cache
    for index in range(3):  # first calls: each from no warm process
        stop(env, db)
        argv, stdin = client_argv(kind, env, db, texts[index], 1000 + index)
        started = time.perf_counter()
        out["first"].append(run(argv, env, stdin))
        out["start"].append(wait_warm(env, db, started))
    states = [("warm", env), ("off", off_env)]
    if kind == "hook":  # the console script, through the same warm process, for comparison
        states.append(("script", env))
    for index in range(runs):
        for number, (state, state_env) in enumerate(states if index % 2 == 0 else states[::-1]):
            client = "hook-script" if state == "script" else kind
            argv, stdin = client_argv(client, env, db, texts[index % len(texts)], 2000 + 3 * index + number)
            out[state].append(run(argv, state_env, stdin))
        out["floor"].append(run([sys.executable, "-c", "pass"], env))  # any new Python process
        out["floor_s"].append(run([sys.executable, "-S", "-c", "pass"], env))  # without site
        if kind == "hook":
            out["answer"].append(warm_answer(db, texts[index % len(texts)], 4000 + index))
    stop(env, db)
    return out


def warm_answer(db: Path, text: str, number: int) -> float:
    """The warm process's own time for one prompt hook (its ``took_ms``), asked from here: what is
    left of a hook's wall time is the client process's start, imports and exit."""
    from localmem.daemon import client

    timing: dict[str, float] = {}
    payload = {"session_id": f"bench-{number}", "prompt": text, "cwd": "/", "hook_event_name": "UserPromptSubmit"}
    client.ask(str(db), "hook", {"event": "UserPromptSubmit", "payload": payload, "settings": {}},
               deadline=time.monotonic() + 60, timing=timing)
    return timing["took_ms"] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="off/warm pairs per client (default 20)")
    parser.add_argument("--mcp-runs", type=int, default=4, help="MCP rounds (default 4)")
    parser.add_argument("--only", default="hook,cli,mcp")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "localmem-bench-cache"))
    args = parser.parse_args()
    from benchmarks.speed import scale
    from localmem import Config, MemoryStore

    cache = Path(args.cache_dir)
    env = environment(cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["LOCALMEM_TRACK_ACCESS"] = "0"
    ensure_export(cache, env, say)
    with tempfile.TemporaryDirectory(prefix="lmd-", dir="/tmp") as tmp:
        folder = Path(tmp)
        (folder / "run").mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"] = str(folder / "run")  # warm_answer asks from here
        source, _ = scale.cached(10_000, False, say)
        db = folder / "scale-10k.db"
        shutil.copyfile(source, db)
        relabel(db, MODEL)
        with MemoryStore(str(db), embedder="hash", config=Config(track_access=False)) as store:
            texts = [kwargs["query"] for _mode, kwargs, _vector in scale.workload(store, max(args.runs, 40) + 10)]
        results = {}
        for kind in args.only.split(","):
            say(f"timing {kind} ...")
            results[kind] = measure(kind, db, env, texts, args.mcp_runs if kind == "mcp" else args.runs)
    lines = ["| client, state | n | p50 ms | p95 ms | mean ms |", "|---|---|---|---|---|"]
    for kind, found in results.items():
        for state in ("off", "first", "start", "warm", "script", "answer", "floor", "floor_s"):
            label = {"off": "no warm process ($LOCALMEM_DAEMON=0)", "first": "first call (starts it)",
                     "start": "  until the warm process answers", "warm": "warm process running",
                     "script": "warm process running, console script `localmem hook`",
                     "answer": "  the warm process's own answer (asked directly, same rounds)",
                     "floor": "  `python -c pass` in the same rounds",
                     "floor_s": "  `python -S -c pass` in the same rounds"}[state]
            if found[state]:
                lines.append(row(f"{kind}: {label}", found[state]))
        if found["off"] and found["warm"] and kind != "mcp":
            ratios = [w / o for w, o in zip(found["warm"], found["off"])]
            lines.append(f"| {kind}: warm / off, per pair (median) | {len(ratios)} | {statistics.median(ratios):.3f} | | |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
