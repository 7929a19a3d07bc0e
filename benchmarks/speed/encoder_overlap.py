"""Whether reading ahead beside the query encoder pays on this machine: three ways, question by question.

recall_stages.py's workload (small_store.py's store of the five LoCoMo dev conversations,
its ``text`` requests: the question alone, scoped to its conversation, limit 20, learned
ranking on, access tracking on). Each question is asked three ways in turn (the order
rotating), each time new to the query cache:

- ``shipped``: the query encoded on the store's aside thread while recall reads the keyword
  statistics ahead (recall/scoped_keywords.py's ``read_ahead``);
- ``no-read-ahead``: encoded on the aside thread, the keyword statistics read later, when the
  keyword scores ask for them (the same reads, none of them beside the encoder);
- ``inline``: encoded on recall's own thread (no hand-off), the statistics read later.

On two cores the encoder's two intra-op threads and recall's reads compete; with more cores the
reads are free. The answers are the same every way (checked per question: ids and scores).

    python benchmarks/speed/encoder_overlap.py --store FILE [--every 2] [--gap 0.02]
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

from benchmarks.speed import small_store  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import pipeline, query_vectors  # noqa: E402

WAYS = ("shipped", "no-read-ahead", "inline")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds to wait before each timed recall")
    args = parser.parse_args(argv)
    if args.gap < 0:
        parser.error("--gap must be at least 0")

    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store,
                                                          Config.from_env(dict(os.environ)), args.every)
    read_ahead, start = pipeline.read_ahead, query_vectors.QueryVectors.start
    patches = {"shipped": (read_ahead, start), "no-read-ahead": (lambda *_: None, start),
               "inline": (lambda *_: None, lambda self, query: False)}
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    differ = dict.fromkeys(WAYS, 0)
    try:
        for index, (query, kwargs) in enumerate(work):
            answers = {}
            for way in WAYS[index % 3:] + WAYS[:index % 3]:
                pipeline.read_ahead, query_vectors.QueryVectors.start = patches[way]
                store._backend._query_cache.clear()
                time.sleep(args.gap)
                started = time.perf_counter()
                response = store.recall(query, **kwargs)
                times[way].append((time.perf_counter() - started) * 1000)
                answers[way] = [(r["id"], r["final_score"], r.get("relevance")) for r in response["results"]]
            for way in WAYS:
                differ[way] += answers[way] != answers["shipped"]
    finally:
        pipeline.read_ahead, query_vectors.QueryVectors.start = read_ahead, start
    print(f"{len(work)} text recalls (every {args.every}th question), wall clock, {args.gap} s before each; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| way | p50 ms | mean ms | median ÷ shipped | answers differing from shipped |")
    print("|---|---:|---:|---:|---:|")
    for way in WAYS:
        ratio = statistics.median(b / a for a, b in zip(times["shipped"], times[way]))
        print(f"| {way} | {statistics.median(times[way]):.2f} | {statistics.fmean(times[way]):.2f} | "
              f"{ratio:.3f} | {differ[way]} |")
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
