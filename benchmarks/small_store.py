"""Recall latency on a small store: the five LoCoMo dev conversations (~2,760 turns).

One memory per dialog turn, threaded by session, exactly as
``benchmarks/locomo.py`` builds it (its loading code is imported), with the
embeddings from its on-disk cache (benchmarks/.cache/embeddings.sqlite). Each
LoCoMo question is then asked with its text and its (cached) embedding passed
in, in two modes:

* ``conversation`` -- scoped to the question's conversation tag, limit 20, no
  adaptive floor (what the LoCoMo evaluation asks);
* ``plain``        -- the whole store, limit 10.

Reports p50 / p95 / mean per mode, then a cProfile pass over the
conversation-scoped questions (top functions by cumulative and by own time).

    python benchmarks/small_store.py [--rounds 2] [--profile-top 25] [--embedder auto|hash]
                                     [--dump answers.json]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import answer_checks  # noqa: E402
from locomo import DEFAULT_DATA, build_store, cached_embedder  # noqa: E402
from localmem import Config  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def requests(questions: list[dict], vectors: list[bytes]) -> dict[str, list[tuple[str, dict]]]:
    """(query, recall kwargs) per mode, the embedding passed in."""
    modes: dict[str, list[tuple[str, dict]]] = {"conversation": [], "plain": []}
    for q, vector in zip(questions, vectors):
        modes["conversation"].append((q["question"], {
            "tags": [q["conv_tag"]], "limit": 20, "adaptive_floor": False, "embedding": vector}))
        modes["plain"].append((q["question"], {"limit": 10, "embedding": vector}))
    return modes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions per mode")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true")
    answer_checks.add_options(parser)
    args = parser.parse_args(argv)
    clock = answer_checks.clock_of(args)

    data = json.loads(Path(args.data).read_text())
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    embedder = cached_embedder(args.embedder)
    store, questions = build_store(data, embedder, ":memory:", config)
    vectors = [b for b in (store.embed_texts([q["question"]])[0] for q in questions)]
    count = store.health()["memory_count"]
    modes = requests(questions, vectors)

    for query, kwargs in modes["conversation"][:20]:  # warm statements and caches
        store.recall(query, **kwargs)
    timings: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for i in range(len(questions)):
            for mode, work in modes.items():  # interleaved, so a noisy spell hits both modes
                query, kwargs = work[i]
                started = clock()
                store.recall(query, **kwargs)
                timings[mode].append((clock() - started) * 1000)

    print(f"{count} memories, {len(questions)} questions x {args.rounds} rounds, {args.clock} clock; "
          "query text and embedding passed in")
    print("| mode | p50 ms | p95 ms | mean ms |")
    print("|---|---:|---:|---:|")
    for mode, values in timings.items():
        print(f"| {mode} | {statistics.median(values):.2f} | {pct(values, 0.95):.2f} | "
              f"{statistics.fmean(values):.2f} |")

    if args.dump:
        def key(result: dict) -> str:  # ids are fresh per build: name a memory by its turn
            return f"{result['memory']['tags'][0]}/{result['memory']['metadata'].get('dia_id')}"
        answer_checks.dump_answers(args.dump, store, modes, key)

    if not args.no_profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for query, kwargs in modes["conversation"]:
            store.recall(query, **kwargs)
        profiler.disable()
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(args.profile_top)
            text = out.getvalue()
            print(f"\ncProfile, conversation mode, {len(questions)} recalls, by {key}:")
            print(text[text.find("   ncalls"):].rstrip())
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
