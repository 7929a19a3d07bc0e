"""What one warm recall with query text does: Python calls, SQL statements, and the top costs.

recall_stages.py's workload (small_store.py's store of the five LoCoMo dev conversations,
its ``text`` requests: the question alone, scoped to its conversation, limit 20, learned
ranking on, access tracking on), run three ways over the same questions:

1. counted: every SQL statement the recall thread runs (apsw's exec trace), by statement,
   with SQLite's own time in it (apsw's profile hook), and apsw's prepared-statement cache
   (hits, misses, evictions) over the run;
2. profiled: cProfile over every thread's recall work (the encoder's thread is not
   traced by cProfile; its time shows as the wait for it), Python calls per recall and the
   top functions by own time and by time inside them;
3. plain: wall and CPU p50 with no tracer on, for scale.

    python benchmarks/speed/recall_profile.py --store FILE [--every 2] [--top 10]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.speed import small_store  # noqa: E402
from localmem import Config  # noqa: E402


def _statement_label(sql: str) -> str:
    """A statement's first words, enough to tell it apart in the table."""
    return " ".join(sql.split())[:90]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--top", type=int, default=10, help="rows in each profile table")
    args = parser.parse_args(argv)

    config = Config.from_env(dict(os.environ))
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store, config,
                                                          args.every)
    conn = store._backend.conn
    recalls = len(work)

    def clear_encodings() -> None:  # every pass meets each question as new, as a user's prompt is
        store._backend._query_cache.clear()

    # 1. SQL statements, counted by the exec trace (the recall thread's connection).
    statements: Counter[str] = Counter()
    spent: Counter[str] = Counter()  # SQLite's own time per statement (ns), run to its end

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements[_statement_label(sql)] += 1
        return True

    def timed(sql: str, nanoseconds: int) -> None:
        spent[_statement_label(sql)] += nanoseconds

    clear_encodings()
    before = conn.cache_stats()
    conn.exec_trace = trace
    conn.set_profile(timed)
    for query, kwargs in work:
        store.recall(query, **kwargs)
    conn.exec_trace = None
    conn.set_profile(None)
    after = conn.cache_stats()
    cache = {key: after[key] - before[key] for key in ("hits", "misses", "evictions", "no_cache", "too_big")}

    # 2. cProfile: calls and costs.
    clear_encodings()
    profile = cProfile.Profile()
    profile.enable()
    for query, kwargs in work:
        store.recall(query, **kwargs)
    profile.disable()
    stats = pstats.Stats(profile)

    # 3. No tracer: the run's own p50, wall and process CPU.
    clear_encodings()
    wall, cpu = [], []
    for query, kwargs in work:
        w, c = time.perf_counter(), time.process_time()
        store.recall(query, **kwargs)
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)

    print(f"{store.health()['memory_count']} memories, {recalls} text recalls per pass (every {args.every}th "
          f"question), load average {os.getloadavg()[0]:.1f}")
    print(f"untraced: wall p50 {statistics.median(wall):.2f} ms, process CPU p50 {statistics.median(cpu):.2f} ms")
    print(f"Python calls per recall (cProfile, recall thread): {stats.total_calls / recalls:,.0f} "
          f"({stats.prim_calls / recalls:,.0f} primitive); profiled time per recall "
          f"{stats.total_tt / recalls * 1000:.2f} ms")
    print(f"SQL statements per recall: {sum(statements.values()) / recalls:.1f} "
          f"({len(statements)} distinct texts), SQLite's time in them {sum(spent.values()) / recalls / 1e6:.2f} ms; "
          f"statement cache over the pass: {cache}\n")
    print("| statement | per recall | SQLite µs per recall |\n|---|---:|---:|")
    for label, count in statements.most_common(args.top * 2):
        print(f"| `{label.replace('|', '/')}` | {count / recalls:.2f} | {spent[label] / recalls / 1000:.0f} |")
    for key, title in (("tottime", "own time"), ("cumulative", "time inside (callees included)"),
                       ("ncalls", "calls")):
        buffer = io.StringIO()
        pstats.Stats(profile, stream=buffer).sort_stats(key).print_stats(args.top)
        print(f"\ntop {args.top} by {title} (cProfile, totals over {recalls} recalls):")
        print("\n".join(line for line in buffer.getvalue().splitlines()
                        if line.strip() and not line.startswith(("   Ordered", "         ")) or "ncalls" in line))
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
