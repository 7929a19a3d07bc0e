"""What the warm process holds in memory when only hooks use it, and what the first MCP window
through it then waits, for two trees in one run (issue 44: the MCP server built lazily).

On a copy of scale.py's cached 10k store (relabelled to the default model, so the warm process
loads MiniLM through the ONNX export, as a user's does), for each tree in turn (the order
alternating round by round), with the tree first on ``PYTHONPATH``:

1. ``localmem daemon start`` (as a hook or the CLI starts it), then one prompt hook through it;
2. after ``--settle`` seconds (time for a start-up's background work), the process's resident
   memory (``VmRSS``) and whether it holds the MCP SDK (``pydantic_core`` mapped): "hooks only";
3. spawn ``localmem mcp`` -> handshake -> first ``recall_memory`` answer (the SDK's stdio client):
   the first MCP window through that process, then its resident memory again, then a second
   window ("steady");
4. ``localmem daemon stop``.

Every file is in a temporary folder; absolute times depend on the machine's load, the paired
rows (same round, one tree after the other) are the comparison.

    python benchmarks/hooks/daemon_memory.py BEFORE_TREE AFTER_TREE [--rounds 3] [--settle 3]
"""

from __future__ import annotations

import argparse
import asyncio
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
for entry in (str(ROOT), str(HERE)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.hooks.cold_start import MODEL, ensure_export, environment  # noqa: E402
from benchmarks.hooks.daemon_latency import _mcp, say  # noqa: E402
from benchmarks.hooks.first_answer import relabel  # noqa: E402


def localmem(env: dict[str, str], db: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args], input=stdin, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"localmem {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def resident(pid: int) -> tuple[float, bool]:
    """(VmRSS in MiB, whether the MCP SDK's pydantic core is mapped) of a live process."""
    with open(f"/proc/{pid}/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/maps") as maps:
        sdk = "pydantic_core" in maps.read()
    return kib / 1024, sdk


def one_round(env: dict[str, str], db: Path, prompt: str, query: str, settle: float) -> dict[str, float]:
    pid = json.loads(localmem(env, db, "daemon", "start", "--json").stdout)["pid"]
    payload = {"session_id": "bench-memory", "prompt": prompt, "cwd": "/", "hook_event_name": "UserPromptSubmit"}
    localmem(env, db, "hook", "UserPromptSubmit", "--deadline", "60", stdin=json.dumps(payload))
    time.sleep(settle)
    hooks_rss, hooks_sdk = resident(pid)
    first = asyncio.run(_mcp(db, env, query))
    mcp_rss, _ = resident(pid)
    steady = asyncio.run(_mcp(db, env, query + " again"))
    localmem(env, db, "daemon", "stop")
    return {"hooks_rss": hooks_rss, "hooks_sdk": float(hooks_sdk), "first_mcp": first, "mcp_rss": mcp_rss,
            "steady_mcp": steady}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs=2, metavar="TREE", help="BEFORE and AFTER source trees")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the hook before measuring")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "localmem-bench-cache"))
    args = parser.parse_args()
    from benchmarks.speed import scale

    cache = Path(args.cache_dir)
    base_env = environment(cache)
    base_env.update(LOCALMEM_TRACK_ACCESS="0", LOCALMEM_DAEMON="1")
    ensure_export(cache, base_env, say)
    trees = [str(Path(tree).resolve()) for tree in args.trees]
    found: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory(prefix="lmm-", dir="/tmp") as tmp:
        folder = Path(tmp)
        (folder / "run").mkdir(mode=0o700)
        source, _ = scale.cached(10_000, False, say)
        db = folder / "scale-10k.db"
        shutil.copyfile(source, db)
        relabel(db, MODEL)
        for number in range(args.rounds):
            for tree in trees if number % 2 == 0 else trees[::-1]:
                env = dict(base_env, XDG_RUNTIME_DIR=str(folder / "run"), PYTHONPATH=tree)
                say(f"round {number + 1}: {tree}")
                found[tree].append(one_round(env, db, f"what did we decide about item {number}?",
                                             f"deploy plan {number}", args.settle))
    print("| tree | rounds | resident after start + a hook (MiB) | MCP SDK loaded then | first MCP window (ms) "
          "| resident after it (MiB) | next MCP window (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for tree, rows in found.items():
        def median(key: str) -> float:
            return statistics.median(row[key] for row in rows)
        print(f"| {tree} | {len(rows)} | {median('hooks_rss'):.1f} | {sum(r['hooks_sdk'] for r in rows):.0f} of "
              f"{len(rows)} | {median('first_mcp') * 1000:.0f} | {median('mcp_rss'):.1f} | "
              f"{median('steady_mcp') * 1000:.0f} |")


if __name__ == "__main__":
    main()
