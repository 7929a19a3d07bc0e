"""Recall latency on a small store: the five LoCoMo dev conversations (~2,760 turns).

One memory per dialog turn, threaded by session, exactly as
``benchmarks/quality/locomo.py`` builds it (its loading code is imported), with the
embeddings from its on-disk cache (benchmarks/.cache/embeddings.sqlite). Each
LoCoMo question is then asked with its text and its (cached) embedding passed
in, in two modes:

* ``conversation`` -- scoped to the question's conversation tag, limit 20, no
  adaptive floor (what the LoCoMo evaluation asks);
* ``plain``        -- the whole store, limit 10;
* ``text``         -- (with ``--text``) as ``conversation`` but with the query
  text alone, as a user's recall passes it: the query embedding (and the
  learned ranking's token vectors, which an explicit embedding turns off) is
  computed in the recall and timed with it.

Reports p50 / p95 / mean per mode, then a cProfile pass over one mode's
questions (``--profile-mode``; top functions by cumulative and by own time).

    python benchmarks/speed/small_store.py [--rounds 2] [--profile-top 25] [--embedder auto|hash]
                                     [--text] [--profile-mode conversation|plain|text]
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
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.common import answer_checks  # noqa: E402
from benchmarks.quality.locomo import DEFAULT_DATA, build_store, cached_embedder, questions_of, turns_of  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.embedders import resolve_embedder  # noqa: E402

# Recall's clock, fixed so that two runs (before and after a change) score alike.
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def requests(questions: list[dict], vectors: list[bytes], text: bool = False) -> dict[str, list[tuple[str, dict]]]:
    """(query, recall kwargs) per mode, the embedding passed in (``text``: also the
    ``text`` mode, the conversation mode with the query text alone)."""
    modes: dict[str, list[tuple[str, dict]]] = {"conversation": [], "plain": []}
    if text:
        modes["text"] = []
    for q, vector in zip(questions, vectors):
        scoped = {"tags": [q["conv_tag"]], "limit": 20, "adaptive_floor": False}
        modes["conversation"].append((q["question"], {**scoped, "embedding": vector}))
        modes["plain"].append((q["question"], {"limit": 10, "embedding": vector}))
        if text:
            modes["text"].append((q["question"], scoped))
    return modes


def open_store(data: list, embedder_spec: str, path: Path, config: Config
               ) -> tuple[MemoryStore, list[dict], list[bytes]]:
    """The store at ``path`` (built there first, from the embedding cache, when missing),
    its questions and their cached embeddings. The store is opened with the embedder
    itself, not the cache, so that a recall given text alone embeds it as a user's does."""
    cached = cached_embedder(embedder_spec)
    if not path.exists():
        built, _ = build_store(data, cached, str(path), config)
        built.close()
    questions = []
    for index, sample in enumerate(data):
        for q in questions_of(sample, {t["dia_id"] for t in turns_of(sample)}):
            questions.append({**q, "conv_tag": f"conv:{index}"})
    reader = MemoryStore(path, embedder=cached, config=config)
    vectors = [reader.embed_texts([q["question"]])[0] for q in questions]
    reader.close()
    store = MemoryStore(path, embedder=resolve_embedder(embedder_spec), config=config, clock=lambda: NOW)
    return store, questions, vectors


def add_warm_text_arguments(parser: argparse.ArgumentParser, every: int) -> None:
    """The options every script built on ``warm_text_requests`` reads: --data, --store, --embedder, --every."""
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--store", help="the store file (built by small_store.py's code when missing)")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--every", type=int, default=every, help="ask every Nth question")


def warm_text_requests(data: str, embedder_spec: str, store_file: str | None, config: Config, every: int
                       ) -> tuple[MemoryStore, list[tuple[str, dict]], tempfile.TemporaryDirectory]:
    """The store (at ``store_file``, built there when missing; else in the scratch folder returned)
    and every ``every``th question's ``text`` request, the first 20 asked once to warm
    statements, caches and the query encoder (recall_stages.py, recall_profile.py)."""
    scratch = tempfile.TemporaryDirectory(prefix="small-store-")
    path = Path(store_file) if store_file else Path(scratch.name) / "locomo.db"
    store, questions, vectors = open_store(json.loads(Path(data).read_text()), embedder_spec, path, config)
    work = requests(questions, vectors, text=True)["text"][::every]
    for query, kwargs in work[:20]:
        store.recall(query, **kwargs)
    return store, work, scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions per mode")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--text", action="store_true",
                        help="also time the text mode (query text alone, embedding included)")
    parser.add_argument("--store", help="keep the built store in this file and reuse it when it exists")
    parser.add_argument("--profile-mode", default="conversation", choices=("conversation", "plain", "text"))
    answer_checks.add_options(parser)
    args = parser.parse_args(argv)
    clock = answer_checks.clock_of(args)

    data = json.loads(Path(args.data).read_text())
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    scratch = tempfile.TemporaryDirectory(prefix="small-store-")
    path = Path(args.store) if args.store else Path(scratch.name) / "locomo.db"
    store, questions, vectors = open_store(data, args.embedder, path, config)
    count = store.health()["memory_count"]
    modes = requests(questions, vectors, args.text)
    if args.profile_mode not in modes:
        parser.error(f"--profile-mode {args.profile_mode} needs --text")

    for work in modes.values():  # warm statements, caches and the query encoder
        for query, kwargs in work[:20]:
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
          "query text and embedding passed in" + (" (text mode: query text alone)" if args.text else ""))
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
        for query, kwargs in modes[args.profile_mode]:
            store.recall(query, **kwargs)
        profiler.disable()
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(args.profile_top)
            text = out.getvalue()
            print(f"\ncProfile, {args.profile_mode} mode, {len(questions)} recalls, by {key}:")
            print(text[text.find("   ncalls"):].rstrip())
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
