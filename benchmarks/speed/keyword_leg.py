"""The keyword leg of recall at scale, for any words a query holds.

Opens the store ``benchmarks/speed/scale.py`` builds (benchmarks/.cache/scale-N.db,
built on first use) and times recall (query embedding passed in) on three
query sets, interleaved so a noisy spell hits each alike:

* ``common``  -- 2-5 of the store's most frequent words (the top terms of the
  full-text index that survive the query's function-word filter);
* ``mixed``   -- 1-3 of those plus 1-2 words of a random memory;
* ``scale``   -- scale.py's own query text (2-5 words of a memory);

and ``common, keyword only``: the common queries without an embedding (the
keyword channel is then the only source). For each it reports the keyword
stage (``keyword_candidates`` plus ``KeywordScorer.scores``, as scale.py's
'keyword' row) and the whole recall, p50 / p95.

    python benchmarks/speed/keyword_leg.py [--tier 100k] [--queries 200] [--dump answers.json]
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.common import answer_checks  # noqa: E402
from benchmarks.speed.scale import NOW, SEED, TIERS, StageTimer, cached, pct, workload  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.recall.keywords import query_terms  # noqa: E402

COMMON_WORDS = 40


def common_words(store: MemoryStore, count: int) -> list[str]:
    """The ``count`` words whose index term is in the most memories (function words excluded)."""
    surface: dict[str, Counter[str]] = {}
    for (content,) in store.conn.execute("SELECT content FROM memories WHERE pk % 50 = 0"):
        for word in set(re.findall(r"[A-Za-z]{3,}", content)):
            word = word.lower()
            if not query_terms(word) or query_terms(word) != [word]:
                continue  # a function word or stopword: never searched
            tokens = store._backend.query_tokens(word)
            if len(tokens) == 1:
                surface.setdefault(tokens[0], Counter())[word] += 1
    ranked = store.conn.execute("SELECT term FROM memories_fts_terms ORDER BY doc DESC")
    out = []
    for (term,) in ranked:
        if term in surface:
            out.append(surface[term].most_common(1)[0][0])
            if len(out) >= count:
                break
    return out


def query_sets(store: MemoryStore, queries: int) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    rng = random.Random(SEED + 15)
    common = common_words(store, COMMON_WORDS)
    base = workload(store, queries)
    sets: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "common": [], "mixed": [], "scale": [], "common, keyword only": []}
    for _mode, kwargs, vector in base:
        words = rng.sample(common, rng.randint(2, 5))
        sets["common"].append((" ".join(words), {"limit": 10, "embedding": vector}))
        sets["common, keyword only"].append((" ".join(words), {"limit": 10}))
        own = re.findall(r"[A-Za-z]{4,}", kwargs["query"])
        mixed = rng.sample(common, rng.randint(1, 3)) + rng.sample(own, min(len(own), rng.randint(1, 2)))
        rng.shuffle(mixed)
        sets["mixed"].append((" ".join(mixed), {"limit": 10, "embedding": vector}))
        sets["scale"].append((kwargs["query"], {"limit": 10, "embedding": vector}))
    return sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="100k", choices=sorted(TIERS))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rebuild", action="store_true")
    answer_checks.add_options(parser)
    args = parser.parse_args(argv)
    clock = answer_checks.clock_of(args)
    say = functools.partial(print, flush=True)
    path, _info = cached(TIERS[args.tier], args.rebuild, say)
    store = MemoryStore(path, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        clock=lambda: NOW)
    sets = query_sets(store, args.queries)
    for name, work in sets.items():  # warm the page cache and statements
        for query, kwargs in work[:5]:
            store.recall(query, **kwargs)
    keyword: dict[str, list[float]] = {name: [] for name in sets}
    whole: dict[str, list[float]] = {name: [] for name in sets}
    with StageTimer(clock) as timer:
        for i in range(args.queries):
            for name, work in sets.items():
                query, kwargs = work[i]
                timer.current = {}
                started = clock()
                store.recall(query, **kwargs)
                whole[name].append((clock() - started) * 1000)
                keyword[name].append(timer.current.get("keyword", 0.0))
    count = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    print(f"{count:,} memories, {args.queries} queries per set, {args.clock} clock; e.g. common: "
          f"{sets['common'][0][0]!r}, mixed: {sets['mixed'][0][0]!r}")
    print("| query set | keyword p50 ms | keyword p95 ms | recall p50 ms | recall p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for name in sets:
        k, w = keyword[name], whole[name]
        print(f"| {name} | {statistics.median(k):.2f} | {pct(k, 0.95):.2f} | "
              f"{statistics.median(w):.2f} | {pct(w, 0.95):.2f} |")
    if args.dump:
        answer_checks.dump_answers(args.dump, store, sets)
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
