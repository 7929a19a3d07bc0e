"""Two trees' recall latency on scale.py's workload, query by query, for a noisy machine.

    python benchmarks/speed/scale_paired.py BEFORE_TREE AFTER_TREE [--passes 2]

Starts one worker process per tree (each imports that tree's ``localmem`` and
opens the cached 100k store of benchmarks/.cache/), warms both as scale.py does,
then sends them the 200 queries of ``scale.py --tiers 100k --queries 200`` one
at a time, the two workers back to back on the same query, taking turns at
going first. Each query's two timings are taken moments apart, so load from
other work falls on both alike; the median over queries of after ÷ before
says how much faster the after tree is, where two separate scale.py runs
can differ by 20% on a shared machine. It measures no floor: scale.py's
ratios still come from scale.py runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("plain", "tag-scoped (one tag)", "tag-scoped (broad prefix)", "time-windowed", "expand_relations")


def worker(queries: int) -> None:
    """Answer 'index' lines on stdin with the milliseconds that query's recall took."""
    from benchmarks.speed import scale
    from localmem import Config, MemoryStore
    store = MemoryStore(scale.CACHE / "scale-100000.db", embedder="none",
                        config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}), clock=lambda: scale.NOW)
    work = scale.workload(store, queries)
    for _mode, kwargs, vector in work[:10]:  # warm as scale.py does
        store.recall(embedding=vector, **kwargs)
    print("ready", flush=True)
    for line in sys.stdin:
        _mode, kwargs, vector = work[int(line)]
        started = time.perf_counter()
        store.recall(embedding=vector, **kwargs)
        print(f"{(time.perf_counter() - started) * 1000:.6f}", flush=True)


def spawn(tree: Path, queries: int) -> subprocess.Popen[str]:
    # The tree's own copy of this file, so that scale.py imports that tree's localmem.
    script = tree / Path(__file__).resolve().relative_to(HERE.parents[1])
    if not script.exists():
        script = Path(__file__)
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    process = subprocess.Popen([sys.executable, str(script), "--worker", str(queries)], cwd=tree, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def timed(process: subprocess.Popen[str], index: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(f"{index}\n")
    process.stdin.flush()
    return float(process.stdout.readline())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", nargs="?")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.path.append(str(HERE.parents[1]))
        worker(args.worker)
        return 0
    if not args.before or not args.after:
        parser.error("give the two trees")
    before, after = spawn(Path(args.before).resolve(), args.queries), spawn(Path(args.after).resolve(), args.queries)
    times: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in MODES}
    for turn in range(args.passes):
        for index in range(args.queries):
            first, second = (before, after) if (index + turn) % 2 == 0 else (after, before)
            one, two = timed(first, index), timed(second, index)
            a, b = (one, two) if first is before else (two, one)
            times[MODES[index % len(MODES)]][0].append(a)
            times[MODES[index % len(MODES)]][1].append(b)
    for process in (before, after):
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    print("| mode | before p50 ms | after p50 ms | after ÷ before, p50s | median of paired ratios |")
    print("|---|---:|---:|---:|---:|")
    for mode, (a, b) in times.items():
        paired = statistics.median(y / x for x, y in zip(a, b))
        print(f"| {mode} | {statistics.median(a):.2f} | {statistics.median(b):.2f} | "
              f"{statistics.median(b) / statistics.median(a):.3f} | {paired:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
