"""recall_v1 at scale: latency against the numpy floor, answers before/after, paired trees.

    python benchmarks/speed/scale_v1.py run [--queries 200] [--tokens]   # p50/p95 and ÷ floor per mode
    python benchmarks/speed/scale_v1.py dump answers.json [--tokens]     # every answer of the workload
    python benchmarks/speed/scale_v1.py compare before.json after.json   # as scale_answers.py compare
    python benchmarks/speed/scale_v1.py paired BEFORE_TREE AFTER_TREE    # as scale_paired.py, for recall_v1

The store is scale.py's 100k store (benchmarks/.cache/, built once); with
``--tokens`` it is token_evidence.py's copy of it with synthetic token codes
(MaxSim and the learned stage then run as they do on a real store). The
queries are scale.py's workload: each query's text reaches recall_v1 through
token_evidence.py's stand-in embedder, which returns the workload's query
vector (and per word a token vector), and the packaged learned-rank model is
told the stand-in is its own embedder, so the default configuration runs
whole. scale.py's five modes become five recall_v1 requests, k=10:

- plain: hybrid, no filters;
- tag-scoped (one tag) / (broad prefix): hybrid with ``filters.tags``;
- time-windowed: ``search_mode`` semantic with ``include_superseded``;
- expand_relations: ``search_mode`` keyword with ``include_explore_hints``.

The floor is the numpy float32 scan of the same vectors (matvec and top 10),
measured in the same run, as scale.py measures it. ``paired`` runs each tree's
own copy of this file when it has one (else this one) with that tree's
``localmem``, both on this tree's benchmarks/.cache store, query by query back
to back, taking turns at going first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from benchmarks.speed import scale  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.recall.learned_rank import TreeModel  # noqa: E402

MODES = ("plain", "tag-scoped (one tag)", "tag-scoped (broad prefix)", "time-windowed", "expand_relations")
V1_MODES = {"plain": "hybrid", "tag-scoped (one tag)": "hybrid, one tag",
            "tag-scoped (broad prefix)": "hybrid, broad prefix",
            "time-windowed": "semantic, include_superseded", "expand_relations": "keyword, explore hints"}


def v1_request(mode: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The recall_v1 keyword arguments for one of scale.py's workload entries."""
    request: dict[str, Any] = {"query": kwargs["query"], "k": 10}
    if "tags" in kwargs:
        request["filters"] = {"tags": kwargs["tags"]}
    if mode == "time-windowed":
        request.update(search_mode="semantic", include_superseded=True)
    elif mode == "expand_relations":
        request.update(search_mode="keyword", include_explore_hints=True)
    return request


def open_store(tokens: bool, queries: int) -> tuple[MemoryStore, list[tuple[str, dict[str, Any], bytes]]]:
    """The 100k store with the stand-in embedder knowing every workload query, and the workload."""
    from benchmarks.speed import token_evidence
    say = print
    path = token_evidence.with_token_codes(100_000, say) if tokens else scale.cached(100_000, False, say)[0]
    embedder = token_evidence.WorkloadEmbedder()
    store = MemoryStore(path, embedder=embedder, config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        clock=lambda: scale.NOW)
    work = scale.workload(store, queries)
    rng = np.random.default_rng(scale.SEED + 17)
    for _mode, kwargs, vector in work:
        embedder.add(kwargs["query"], vector, rng)
    store.learned_model = dataclasses.replace(TreeModel.packaged(), embedders=(embedder.name,))
    return store, work


def warm(store: MemoryStore, work: list[tuple[str, dict[str, Any], bytes]]) -> None:
    for mode, kwargs, _vector in work[:10]:  # the page cache and statements, as scale.py warms
        store.recall_v1(**v1_request(mode, kwargs))


def floor_ms(store: MemoryStore, work: list[tuple[str, dict[str, Any], bytes]]) -> list[float]:
    matrix = np.frombuffer(b"".join(r[0] for r in store.conn.execute(
        "SELECT embedding FROM memory_embeddings ORDER BY pk")), dtype=np.float32).reshape(-1, scale.DIMS)
    out = []
    for _mode, _kwargs, vector in work[:100]:
        q = np.frombuffer(vector, dtype=np.float32)
        started = time.perf_counter()
        np.argpartition(-(matrix @ q), 10)[:10]
        out.append((time.perf_counter() - started) * 1000)
    return out


def run(args: argparse.Namespace) -> None:
    store, work = open_store(args.tokens, args.queries)
    warm(store, work)
    times: dict[str, list[float]] = {}
    floors: list[float] = []
    applied = 0
    for index, (mode, kwargs, _vector) in enumerate(work):
        started = time.perf_counter()
        response = store.recall_v1(**v1_request(mode, kwargs))
        times.setdefault(mode, []).append((time.perf_counter() - started) * 1000)
        applied += bool(response["learned_rank"]["applied"])
        if index % 40 == 39:  # the floor in turns with the recalls, so both see the same load
            floors += floor_ms(store, work[index - 39:index - 19])
    floor = statistics.median(floors + floor_ms(store, work))
    store.close()
    print(f"store: {'tokens' if args.tokens else 'scale'}-100000; {len(work)} queries; learned stage applied "
          f"in {applied}; numpy float32 floor p50 {floor:.2f} ms")
    print("| mode | recall_v1 request | p50 ms | p95 ms | p50 ÷ floor | p95 ÷ floor |")
    print("|---|---|---:|---:|---:|---:|")
    for mode in MODES:
        values = times.get(mode, [])
        if values:
            p50, p95 = statistics.median(values), scale.pct(values, 0.95)
            print(f"| {mode} | {V1_MODES[mode]} | {p50:.1f} | {p95:.1f} | {p50 / floor:.2f} | {p95 / floor:.2f} |")


def dump(args: argparse.Namespace) -> None:
    import localmem
    store, work = open_store(args.tokens, args.queries)
    answers = []
    for mode, kwargs, _vector in work:
        response = store.recall_v1(**v1_request(mode, kwargs))
        response.pop("query_time_ms", None)
        answers.append({"mode": mode, "response": response})
    store.close()
    with open(args.path, "w") as out:
        json.dump(answers, out)
    print(f"{len(answers)} recall_v1 answers from {localmem.__file__} -> {args.path}")


def worker(tokens: bool, queries: int) -> None:
    """Answer 'index' lines on stdin with the milliseconds that query's recall_v1 took."""
    store, work = open_store(tokens, queries)
    warm(store, work)
    print("ready", flush=True)
    for line in sys.stdin:
        mode, kwargs, _vector = work[int(line)]
        started = time.perf_counter()
        store.recall_v1(**v1_request(mode, kwargs))
        print(f"{(time.perf_counter() - started) * 1000:.6f}", flush=True)


def paired(args: argparse.Namespace) -> None:
    def spawn(tree: Path) -> subprocess.Popen[str]:
        script = tree / Path(__file__).resolve().relative_to(HERE.parents[1])
        if not script.exists():
            script = Path(__file__)
        env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
        command = [sys.executable, str(script), "worker", str(args.queries)] + (["--tokens"] if args.tokens else [])
        process = subprocess.Popen(command, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        assert process.stdout is not None
        while (line := process.stdout.readline()) and line.strip() != "ready":
            pass  # the store's own messages (building, adding token codes)
        return process

    def timed(process: subprocess.Popen[str], index: int) -> float:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(f"{index}\n")
        process.stdin.flush()
        return float(process.stdout.readline())

    before, after = spawn(Path(args.before).resolve()), spawn(Path(args.after).resolve())
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
    print("| mode | before p50 ms | after p50 ms | before p95 ms | after p95 ms | median of paired ratios |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, (a, b) in times.items():
        ratio = statistics.median(y / x for x, y in zip(a, b))
        print(f"| {mode} | {statistics.median(a):.1f} | {statistics.median(b):.1f} | "
              f"{scale.pct(a, 0.95):.1f} | {scale.pct(b, 0.95):.1f} | {ratio:.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "dump", "paired", "worker", "compare"):
        one = sub.add_parser(name)
        if name == "dump":
            one.add_argument("path")
        elif name == "compare":
            one.add_argument("before")
            one.add_argument("after")
            continue
        elif name == "paired":
            one.add_argument("before")
            one.add_argument("after")
            one.add_argument("--passes", type=int, default=2)
        elif name == "worker":
            one.add_argument("worker_queries", type=int)
        one.add_argument("--queries", type=int, default=200)
        one.add_argument("--tokens", action="store_true", help="the store with synthetic token codes")
    args = parser.parse_args(argv)
    if args.command == "compare":
        from benchmarks.speed import scale_answers
        return scale_answers.compare(args.before, args.after)
    if args.command == "worker":
        worker(args.tokens, args.worker_queries)
    else:
        {"run": run, "dump": dump, "paired": paired}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
