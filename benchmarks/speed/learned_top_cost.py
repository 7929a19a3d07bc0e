"""The learned ranking's cost per recall at each cut (how many candidates the trees score).

small_store.py's store and ``text`` requests (as recall_stages.py asks them). Each
request is asked once through ``MemoryStore.recall`` with the learned stage's inputs
kept (the model, the candidate pool, the query, the date it names); then, on those
same pools, ``learned_rank.learned_components`` (the pool's features and the trees on
the ``top`` best) is timed at every cut in turn, the cuts' order rotated from one
round to the next, so each cut's time and its difference from the first cut are
paired pool by pool within one process. The features are measured against the whole
pool at every cut; only the trees' rows grow with it.

    python benchmarks/speed/learned_top_cost.py --store FILE [--every 2] [--cuts 30,45,60,90]
        [--rounds 5] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.common.number_options import whole_numbers  # noqa: E402
from benchmarks.speed import small_store  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import learned_rank, pipeline  # noqa: E402


def kept_pools(store, work: list[tuple[str, dict]]) -> list[tuple]:
    """(model, candidates, query, mention) of each request's learned stage, asked once each."""
    kept: list[tuple] = []
    real = pipeline.learned_components

    def keeping(model, candidates, query, mention=None):
        kept.append((model, candidates, query, mention))
        return real(model, candidates, query, mention)

    pipeline.learned_components = keeping
    try:
        for query, kwargs in work:
            response = store.recall(query, **kwargs)
            if not response.get("learned_rank", {}).get("applied"):
                raise SystemExit(f"the learned ranking was not applied: {response.get('learned_rank')}")
    finally:
        pipeline.learned_components = real
    return kept


def time_cuts(pools: list[tuple], cuts: list[int], rounds: int, clock: Callable[[], float]
              ) -> dict[int, list[float]]:
    """Per cut, each pool's median milliseconds for the learned stage over ``rounds``, the
    cuts taken in turn on each pool, their order rotated from one round to the next."""
    times: dict[int, list[list[float]]] = {cut: [[] for _ in pools] for cut in cuts}
    for round_number in range(rounds):
        order = cuts[round_number % len(cuts):] + cuts[:round_number % len(cuts)]
        for index, (model, candidates, query, mention) in enumerate(pools):
            for cut in order:
                started = clock()
                learned_rank.learned_components(model, candidates, query, mention, top=cut)
                times[cut][index].append((clock() - started) * 1000)
    return {cut: [statistics.median(values) for values in times[cut]] for cut in cuts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--cuts", default="30,45,60,90", type=whole_numbers(1),
                        help="comma-separated; the first is the reference")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu: this thread's CPU time (steadier on a loaded machine); wall: elapsed")
    args = parser.parse_args(argv)
    cuts = args.cuts
    if args.rounds < 1:
        parser.error(f"--rounds: must be at least 1 (got {args.rounds})")

    # The environment's settings, as recall_stages.py reads them (LOCALMEM_LEARNED_RANK_MODEL among them).
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store,
                                                          Config.from_env(dict(os.environ)), args.every)
    pools = kept_pools(store, work)
    per_pool = time_cuts(pools, cuts, args.rounds, time.thread_time if args.clock == "cpu" else time.perf_counter)
    sizes = [len(candidates) for _, candidates, _, _ in pools]
    print(f"{len(pools)} pools (--every {args.every}), median {statistics.median(sizes):.0f} candidates "
          f"(min {min(sizes)}, max {max(sizes)}); {args.rounds} rounds; {args.clock} clock")
    print(f"| cut | learned stage, median ms per recall | difference from cut {cuts[0]}, median ms | ratio |")
    print("|---:|---:|---:|---:|")
    reference = per_pool[cuts[0]]
    for cut in cuts:
        differences = [a - b for a, b in zip(per_pool[cut], reference)]
        ratios = [a / b for a, b in zip(per_pool[cut], reference) if b > 0]
        print(f"| {cut} | {statistics.median(per_pool[cut]):.3f} | {statistics.median(differences):+.3f} | "
              f"{statistics.median(ratios):.2f} |")
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
