"""The tag-scoped tail at 100k (issue 44 item 5): how far p95 is from p50, and where the slow
queries spend their time.

On scale.py's cached 100k store (built there when missing; query vectors given, as scale.py
does), the workload's two tag-scoped modes are asked ``--queries`` times each (the warm-up not
counted): p50 / p95 / p95÷p50 per mode; then, for the slowest 5% against the rest, the median
time of each recall stage (scale.py's StageTimer), how many memories carry the scope's tag (or
tag prefix), and the candidates the stages saw.

    python benchmarks/speed/tag_tail.py [--queries 400] [--tier 100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.speed import scale  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402

MODES = ("tag-scoped (one tag)", "tag-scoped (broad prefix)")


def tag_size(store: MemoryStore, tag: str, cache: dict[str, int]) -> int:
    """Memories whose tags hold ``tag`` or start with ``tag:`` (the default prefix match)."""
    if tag not in cache:
        cache[tag] = store.conn.execute(
            "SELECT count(DISTINCT m.pk) FROM memories AS m, json_each(m.tags) AS t "
            "WHERE t.value = ? OR t.value LIKE ? ESCAPE '\\'",
            (tag, tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%")).fetchone()[0]
    return cache[tag]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=400, help="per mode (default 400)")
    parser.add_argument("--tier", type=int, default=100_000)
    args = parser.parse_args()
    path, _info = scale.cached(args.tier, False, print)
    store = MemoryStore(path, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        clock=lambda: scale.NOW)
    work = [w for w in scale.workload(store, args.queries * 5) if w[0] in MODES]
    for _mode, kwargs, vector in work[:20]:
        store.recall(embedding=vector, **kwargs)
    sizes: dict[str, int] = {}
    rows = []
    with scale.StageTimer() as timer:
        for mode, kwargs, vector in work:
            timer.current = {}
            started = time.perf_counter()
            answer = store.recall(embedding=vector, **kwargs)
            ms = (time.perf_counter() - started) * 1000
            rows.append({"mode": mode, "ms": ms, "tag": kwargs["tags"][0], "stages": dict(timer.current),
                         "count": answer.get("count", 0)})
    for row in rows:
        row["tag_size"] = tag_size(store, row["tag"], sizes)
    print(f"{args.tier:,} memories; {len(rows)} tag-scoped recalls, query vectors given, limit 10")
    print("| mode | n | p50 ms | p95 ms | p99 ms | p95 / p50 |")
    print("|---|---|---|---|---|---|")
    for mode in MODES:
        times = [r["ms"] for r in rows if r["mode"] == mode]
        p50, p95, p99 = (scale.pct(times, q) for q in (0.5, 0.95, 0.99))
        print(f"| {mode} | {len(times)} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {p95 / p50:.1f} |")
    ordered = sorted(rows, key=lambda r: r["ms"])
    cut = max(1, len(ordered) // 20)
    slow, rest = ordered[-cut:], ordered[:-cut]
    stages = sorted({s for r in rows for s in r["stages"]})
    print("\nslowest 5% against the rest (medians):")
    print("| group | n | ms | tag size | " + " | ".join(f"{s} ms" for s in stages) + " |")
    print("|---|---|---|---|" + "---|" * len(stages))
    for name, group in (("slowest 5%", slow), ("the rest", rest)):
        cells = [f"{statistics.median([r['stages'].get(s, 0.0) for r in group]):.1f}" for s in stages]
        print(f"| {name} | {len(group)} | {statistics.median([r['ms'] for r in group]):.1f} | "
              f"{statistics.median([r['tag_size'] for r in group]):.0f} | " + " | ".join(cells) + " |")
    print("\nthe ten slowest:")
    for row in ordered[-10:]:
        top = sorted(row["stages"].items(), key=lambda kv: -kv[1])[:3]
        print(f"  {row['ms']:.1f} ms  {row['mode']}  tag {row['tag']!r} ({row['tag_size']:,} memories)  "
              + ", ".join(f"{k} {v:.1f}" for k, v in top))
    store.close()


if __name__ == "__main__":
    main()
