"""The vector channel's token product started early, against one product of the whole pool.

Two checks (recall/late_interaction.py, ``early_token_matches``):

- ``--blas N``: whether BLAS gives a stored token's sums the same bits whatever other tokens share
  the product, on this machine's numpy: N random shapes of the recall's product (stored tokens x
  query tokens x 384 dimensions), one product against the same rows in two parts, counted
  separately for parts at least ``SPLIT_CELLS`` large (the only ones recall makes) and smaller ones.
- ``--store FILE``: recall_stages.py's workload (small_store.py's store of the five LoCoMo dev
  conversations, its ``text`` requests: the question alone, scoped to its conversation, limit 20,
  learned ranking on), each question asked twice in turn, new to the query cache each time:
  ``shipped`` (the vector channel's finds matched while the other channels read) and ``whole``
  (``early_token_matches`` giving None: one product after every channel, as before). Reports how
  often the early product ran, how many of its tokens the rest's part took back, the answers that
  differ (ids, scores and relevance, to the bit) and the wall time of each way.

    python benchmarks/speed/early_tokens.py --blas 2000
    python benchmarks/speed/early_tokens.py --store FILE [--every 2] [--gap 0.02]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402

from benchmarks.speed import small_store  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import late_interaction, pipeline  # noqa: E402
from localmem.storage.blas import one_blas_thread  # noqa: E402

WAYS = ("shipped", "whole")
DIMS = 384


def blas_check(trials: int, seed: int = 0) -> dict[str, list[int]]:
    """[trials, differing] for split points whose smaller part is at least SPLIT_CELLS, and below."""
    rng = np.random.default_rng(seed)
    counts = {"parts >= SPLIT_CELLS": [0, 0], "a part below": [0, 0]}
    for _ in range(trials):
        query_tokens = int(rng.integers(1, 41))
        stored = int(rng.integers(2, 9000))
        bits = (rng.random((stored, DIMS)) < 0.5).astype(np.float32)
        query = (rng.standard_normal((query_tokens, DIMS)) / DIMS).astype(np.float32)
        cut = int(rng.integers(1, stored))
        with one_blas_thread():
            whole = (bits @ query.T).T
            parts = np.concatenate([(bits[:cut] @ query.T).T, (bits[cut:] @ query.T).T], axis=1)
        smaller = min(cut, stored - cut) * query_tokens * DIMS
        row = counts["parts >= SPLIT_CELLS" if smaller >= late_interaction.SPLIT_CELLS else "a part below"]
        row[0] += 1
        row[1] += not np.array_equal(whole, parts)
    return counts


def store_check(args: argparse.Namespace) -> None:
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store,
                                                          Config.from_env(dict(os.environ)), args.every)
    early, joined = pipeline.early_token_matches, late_interaction._joined
    seen = {"started": 0, "too small": 0, "joined": 0}
    taken: list[int] = []

    def noting_early(*a, **k):
        found = early(*a, **k)
        seen["started" if found is not None else "too small"] += 1
        return found

    def noting_joined(backend, matches, rest):
        least = -(-late_interaction.SPLIT_CELLS // (matches.query.shape[0] * matches.query.shape[1]))
        rest_tokens, first_tokens = sum(rest.counts), sum(matches.codes.counts)
        back = min(first_tokens, max(0, least - rest_tokens)) if rest_tokens else 0
        seen["joined"] += 1
        taken.append(back)
        return joined(backend, matches, rest)

    patches = {"shipped": noting_early, "whole": lambda *a, **k: None}
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    differ = 0
    late_interaction._joined = noting_joined
    try:
        for index, (query, kwargs) in enumerate(work):
            answers = {}
            for way in WAYS[index % 2:] + WAYS[:index % 2]:
                pipeline.early_token_matches = patches[way]
                store._backend._query_cache.clear()
                time.sleep(args.gap)
                started = time.perf_counter()
                response = store.recall(query, **kwargs)
                times[way].append((time.perf_counter() - started) * 1000)
                answers[way] = [(r["id"], r["final_score"], r.get("relevance")) for r in response["results"]]
            differ += answers["shipped"] != answers["whole"]
    finally:
        pipeline.early_token_matches, late_interaction._joined = early, joined
    print(f"{len(work)} text recalls (every {args.every}th question), wall clock, {args.gap} s before each; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"early product: {seen['started']} started, {seen['too small']} too small to start; of those "
          f"started {seen['joined']} joined with the rest's part; "
          f"tokens the rest's part took back: median {statistics.median(taken or [0]):.0f}, "
          f"max {max(taken or [0])}")
    print(f"answers differing (ids, scores, relevance): {differ} of {len(work)}")
    print("| way | p50 ms | mean ms | median ÷ whole |")
    print("|---|---:|---:|---:|")
    for way in WAYS:
        ratio = statistics.median(b / a for a, b in zip(times["whole"], times[way]))
        print(f"| {way} | {statistics.median(times[way]):.2f} | {statistics.fmean(times[way]):.2f} | {ratio:.3f} |")
    store.close()
    scratch.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds to wait before each timed recall")
    parser.add_argument("--blas", type=int, default=0, help="random product shapes to check (no store run)")
    args = parser.parse_args(argv)
    if args.gap < 0:
        parser.error("--gap must be at least 0")
    if args.blas < 0:
        parser.error("--blas must be at least 0")
    if args.blas:
        print(f"{args.blas} random products (stored tokens 2-9000, query tokens 1-40, {DIMS} dimensions), "
              f"split at a random row; SPLIT_CELLS = {late_interaction.SPLIT_CELLS:,}")
        print("| parts | products | differing in any bit |")
        print("|---|---:|---:|")
        for name, (count, bad) in blas_check(args.blas).items():
            print(f"| {name} | {count} | {bad} |")
        return 0
    store_check(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
