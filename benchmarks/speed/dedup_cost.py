"""What dedup on write costs per write: ``store`` against ``store_checked``, and ``store_many``
against ``store_many_checked``, paired and interleaved in one process (ratios, not absolutes).

The store is filled first with ``--fill`` LoCoMo dev turns (as benchmarks/quality/locomo.py stores
them); the measured writes store further turns, each new to the store, one plain write and one
checked write per pair, in ABBA order so neither side always runs on the larger store. Each
checked write does the near-duplicate kNN (one code-index search) before the write lock and
the exact-key lookup under it (docs/dedup.md).

    python benchmarks/speed/dedup_cost.py [--embedder hash|all-MiniLM-L6-v2] [--fill 1500]
                                    [--pairs 200] [--batches 10] [--batch-size 25]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.quality.locomo import memory_item, turns_of  # noqa: E402

from localmem import MemoryStore  # noqa: E402

DATA = Path("/work/shared/data/locomo-dev.json")


def items() -> list[dict]:
    data = json.loads(DATA.read_text("utf-8"))
    return [memory_item(turn, index) for index, sample in enumerate(data) for turn in turns_of(sample)]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired(plain, checked, count: int) -> tuple[list[float], list[float]]:
    a, b = [], []
    for n in range(count):
        if n % 4 in (0, 3):  # ABBA
            a.append(timed(plain))
            b.append(timed(checked))
        else:
            b.append(timed(checked))
            a.append(timed(plain))
    return a, b


def report(name: str, a: list[float], b: list[float], per: int = 1) -> str:
    ratios = sorted(y / x for x, y in zip(a, b))
    return (f"| {name} | {len(a)} | {statistics.median(a) / per * 1e3:.2f} | "
            f"{statistics.median(b) / per * 1e3:.2f} | {statistics.median(ratios):.3f} | "
            f"{ratios[len(ratios) // 4]:.3f}–{ratios[3 * len(ratios) // 4]:.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--fill", type=int, default=1500)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=25)
    parser.add_argument("--upkeep-items", type=int, default=1000,
                        help="items per store_many in the key-upkeep comparison")
    args = parser.parse_args(argv)
    pool = items()
    need = args.fill + 2 * args.pairs + 2 * args.batches * args.batch_size
    if need > len(pool):
        raise SystemExit(f"needs {need} turns, LoCoMo dev has {len(pool)}")
    fill, rest = pool[:args.fill], iter(pool[args.fill:])
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(Path(tmp) / "cost.db", embedder=args.embedder) as store:
        store.store_many(fill)
        store.store_checked("warm the checked path")
        a, b = paired(lambda: store.store(**next(rest)), lambda: store.store_checked(**next(rest)), args.pairs)
        batch = lambda: [next(rest) for _ in range(args.batch_size)]  # noqa: E731
        c, d = paired(lambda: store.store_many(batch()), lambda: store.store_many_checked(batch()), args.batches)
        checked = store.store_many_checked(fill[:args.batch_size])  # every item an exact duplicate
    print(f"embedder {args.embedder}; store filled with {args.fill} turns\n")
    print("| write | pairs | plain ms (median) | checked ms (median) | ratio (median of pairs) | IQR |")
    print("|---|---|---|---|---|---|")
    print(report("store vs store_checked", a, b))
    print(report(f"store_many vs store_many_checked, per item ({args.batch_size}/batch)", c, d, args.batch_size))
    print(f"\nre-storing {args.batch_size} filled turns with dedup: "
          f"{sum(r['deduped'] for r in checked)} deduped")
    print(upkeep(pool[:args.upkeep_items], args.embedder, args.batches))
    return 0


def upkeep(batch: list[dict], embedder: str, rounds: int) -> str:
    """What every write now pays, dedup or not: the key of each new memory (normalised,
    hashed, one row in memory_dedup_keys). ``store_many`` of one batch, vectors given (so the
    write path alone is timed), into a fresh store each time, with the key upkeep replaced
    by a no-op (before) and as it is (after), paired."""
    from localmem.storage import dedup_keys

    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore(Path(tmp) / "vectors.db", embedder=embedder) as store:
            found = store.embed_texts([item["content"] for item in batch])
        given = [{**item, "embedding": list(memoryview(v).cast("f"))} for item, v in zip(batch, found or [])]
        real_insert, real_key = dedup_keys.insert_keys, dedup_keys.row_key
        counter = iter(range(10**6))

        def write(on: bool) -> None:
            dedup_keys.insert_keys = real_insert if on else (lambda *a: None)
            dedup_keys.row_key = real_key if on else (lambda row: b"")
            try:
                with MemoryStore(Path(tmp) / f"s{next(counter)}.db", embedder=embedder) as store:
                    store.store_many(given)
            finally:
                dedup_keys.insert_keys, dedup_keys.row_key = real_insert, real_key

        write(True)
        before, after = paired(lambda: write(False), lambda: write(True), rounds)
    return ("\n| write path | pairs | without keys ms | with keys ms | ratio (median of pairs) | IQR |\n"
            "|---|---|---|---|---|---|\n"
            + report(f"store_many of {len(batch)} (vectors given, fresh store), per item", before, after,
                     len(batch)))


if __name__ == "__main__":
    raise SystemExit(main())
