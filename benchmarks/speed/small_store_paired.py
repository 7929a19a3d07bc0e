"""Two trees' recall latency on small_store.py's workload, query by query, for a noisy machine.

    python benchmarks/speed/small_store_paired.py BEFORE_TREE AFTER_TREE --store FILE
        [--modes text,conversation,plain,v1] [--passes 1] [--every 1] [--gap S] [--cold N]
        [--after-env KEY=VALUE ...]
    LOCALMEM_PAIRED_CLOCK=cpu python benchmarks/speed/small_store_paired.py ...   (thread CPU time)
    LOCALMEM_PAIRED_CLOCK=process ... --gap 0.05   (the worker's CPU time, every thread; see worker)

Starts one worker process per tree (this script, importing that tree's ``localmem``
and small_store.py, and opening the same store FILE, built by small_store.py
``--store FILE`` first when missing), warms both as small_store.py does, then
sends them the questions one at a time, the two workers back to back on the same
question and mode, taking turns at going first (as scale_paired.py does at 100k).
Reports each tree's p50 / p95 / mean per mode and the median over questions of
after ÷ before. Modes: small_store.py's ``text``, ``conversation`` and ``plain``,
and ``v1``: ``recall_v1`` with the question text, scoped to its conversation's tag,
k 20 (what benchmarks/quality/locomo.py asks).

``--cold N`` then times N pairs of new processes, the trees taking turns at going
first: ``python -m localmem --db FILE recall QUESTION --tags TAG --limit 20 --json``
(warm process off), from spawn to exit, a different question each pair.

``--after-env KEY=VALUE`` (repeatable) sets an environment variable in AFTER's
processes only: one tree against itself with a setting changed (the same tree may be
given twice), e.g. ``--after-env LOCALMEM_QUERY_INT8=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(data: str, store_path: str, embedder: str) -> None:
    """Answer 'mode index' lines on stdin with the milliseconds that recall took: wall clock,
    or with LOCALMEM_PAIRED_CLOCK=cpu the CPU time of the thread that runs recall (on a
    machine shared with other work it leaves out the time the scheduler gave to others;
    the process's CPU time would count the embedder's and BLAS's idle pool threads spinning
    between requests: the same tree on both sides read 1.18 by it in conversation mode),
    or with LOCALMEM_PAIRED_CLOCK=process that process CPU time, every thread's (the work a
    recall costs the machine, the pool threads' included; with ``--gap`` the threads that
    spun after the previous request are idle again)."""
    clock = {"cpu": time.thread_time, "process": time.process_time}.get(
        os.environ.get("LOCALMEM_PAIRED_CLOCK", ""), time.perf_counter)
    from benchmarks.speed import small_store
    from localmem import Config
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    store, questions, vectors = small_store.open_store(json.loads(Path(data).read_text()), embedder,
                                                       Path(store_path), config)
    modes = small_store.requests(questions, vectors, text=True)
    modes["v1"] = [(q["question"], {"k": 20, "filters": {"tags": [q["conv_tag"]]}, "include_superseded": False})
                   for q in questions]
    for mode, work in modes.items():
        ask = store.recall_v1 if mode == "v1" else store.recall
        for query, kwargs in work[:20]:
            ask(query, **kwargs)
    print(f"ready {len(questions)}", flush=True)
    for line in sys.stdin:
        mode, index = line.split()
        query, kwargs = modes[mode][int(index)]
        ask = store.recall_v1 if mode == "v1" else store.recall
        started = clock()
        ask(query, **kwargs)
        print(f"{(clock() - started) * 1000:.6f}", flush=True)
    store.close()


def spawn(tree: Path, args: argparse.Namespace, extra: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", **extra)
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", "--data", args.data,
                                "--store", args.store, "--embedder", args.embedder],
                               cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    word, count = process.stdout.readline().split()
    assert word == "ready"
    return process, int(count)


def timed(process: subprocess.Popen[str], mode: str, index: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(f"{mode} {index}\n")
    process.stdin.flush()
    return float(process.stdout.readline())


def cold_pairs(trees: dict[str, Path], args: argparse.Namespace, count: int,
               extra: dict[str, dict[str, str]]) -> dict[str, list[float]]:
    """Seconds from spawn to exit of a new ``localmem recall`` process per tree, ``count`` pairs."""
    from benchmarks.quality.locomo import questions_of, turns_of
    data = json.loads(Path(args.data).read_text())
    asked = [(q["question"], f"conv:{index}") for index, sample in enumerate(data)
             for q in questions_of(sample, {t["dia_id"] for t in turns_of(sample)})]
    times: dict[str, list[float]] = {name: [] for name in trees}
    for n in range(count):
        question, tag = asked[(n * 37) % len(asked)]
        order = list(trees.items()) if n % 2 == 0 else list(trees.items())[::-1]
        for name, tree in order:
            env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", LOCALMEM_DAEMON="0",
                       LOCALMEM_TRACK_ACCESS="0", **extra[name])
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "localmem", "--db", args.store, "recall", question, "--tags", tag,
                            "--limit", "20", "--json"], cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - started)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    sys.path.append(str(HERE.parents[1]))
    from benchmarks.quality.locomo import DEFAULT_DATA
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", nargs="?")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--store", required=True, help="the store file both trees open (built when missing)")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--modes", default="text,conversation")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question only")
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds to wait before each timed request, so that threads the other worker "
                             "left spinning after its request have gone idle")
    parser.add_argument("--cold", type=int, default=0, help="also time this many pairs of new recall processes")
    parser.add_argument("--after-env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable for AFTER's processes only (repeatable)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.data, args.store, args.embedder)
        return 0
    if not args.before or not args.after:
        parser.error("give the two trees")
    extra: dict[str, dict[str, str]] = {"before": {}, "after": {}}
    for pair in args.after_env:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            parser.error(f"--after-env wants KEY=VALUE, got {pair!r}")
        extra["after"][key.strip()] = value
    # The first builds the store when it is missing; the second then opens it.
    before, count = spawn(Path(args.before).resolve(), args, extra["before"])
    after, _ = spawn(Path(args.after).resolve(), args, extra["after"])
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    times: dict[str, dict[str, list[float]]] = {m: {"before": [], "after": []} for m in modes}
    turn = 0
    for _ in range(args.passes):
        for index in range(0, count, args.every):
            for mode in modes:
                pair = [("before", before), ("after", after)]
                if turn % 2:
                    pair.reverse()
                turn += 1
                for name, process in pair:
                    if args.gap:
                        time.sleep(args.gap)
                    times[mode][name].append(timed(process, mode, index))
    for process in (before, after):
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    measure = {"cpu": "recall thread CPU time", "process": "worker process CPU time (all threads)"}.get(
        os.environ.get("LOCALMEM_PAIRED_CLOCK", ""), "wall clock")
    print(f"{count} questions (every {args.every}), {args.passes} pass(es), {measure}, paired"
          + (f", {args.gap} s before each request" if args.gap else "")
          + (f", after with {' '.join(args.after_env)}" if args.after_env else ""))
    print("| mode | before p50 | before p95 | after p50 | after p95 | before mean | after mean "
          "| median after/before |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in modes:
        b, a = times[mode]["before"], times[mode]["after"]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        print(f"| {mode} | {statistics.median(b):.2f} | {pct(b, 0.95):.2f} | {statistics.median(a):.2f} | "
              f"{pct(a, 0.95):.2f} | {statistics.fmean(b):.2f} | {statistics.fmean(a):.2f} | {ratio:.3f} |")
    if args.cold:
        cold = cold_pairs({"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}, args, args.cold,
                          extra)
        b, a = cold["before"], cold["after"]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        print(f"\nnew process, spawn to exit of `localmem recall --json` (warm process off), {args.cold} pairs, s")
        print("| before p50 | before max | after p50 | after max | median after/before |")
        print("|---:|---:|---:|---:|---:|")
        print(f"| {statistics.median(b):.3f} | {max(b):.3f} | {statistics.median(a):.3f} | {max(a):.3f} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
