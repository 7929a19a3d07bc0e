"""Several trees' write path in one run: bulk writes, edges and single writes, trees taking turns.

    python benchmarks/speed/writes_paired.py TREE [TREE ...] [--tiers 10k,100k] [--edges 3000]
                                             [--single 500] [--rounds 2] [--dump]

For each tier and round, every tree runs once in its own process (``PYTHONPATH`` = that
tree), in an order that rotates each round, on the same items:

- ``store_many`` of the tier's N synthetic memories (benchmarks/speed/ingest.py's generator,
  about 40% typed, the rest classified; in four contexts; every third in a session, so its
  full-text row carries its neighbours' text), each with a given unit vector, in calls of 5,000, into a fresh file:
  rows/s;
- then ``--edges`` ``associate()`` calls between random pairs of them, as scale.py builds its
  edges (one transaction each, as a user pays it): edges/s;
- then ``--single`` ``store()`` calls one memory at a time with given vectors into that
  store: writes/s.

Each figure is the median over rounds, per CPU second of the writing process (user + system:
on a shared machine the wall clock is mostly other work's time) and per wall-clock second; the
ratio columns divide each tree's median by the first tree's. ``--dump`` (with fixed ids, times and clock) also compares every table's rows between
the trees, so a faster write path is seen to write the same bytes (the store's random id and
wall-clock columns are left out, and the store's own id is masked in the stamps that end with
it; they differ between any two stores).

Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common.tree_worker import run_in_tree  # noqa: E402

TIERS = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
BATCH = 5_000

WORKER = r"""
import hashlib, json, pickle, random, sys, time
from datetime import datetime, timezone
from localmem import MemoryStore
items_path, db, edges, single, dump = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
with open(items_path, "rb") as f:
    items, extra = pickle.load(f)
clock = (lambda: datetime(2025, 6, 1, tzinfo=timezone.utc)) if dump else None
store = MemoryStore(db, embedder="hash", clock=clock) if clock else MemoryStore(db, embedder="hash")
out = {}
started, cpu = time.perf_counter(), time.process_time()
for k in range(0, len(items), BATCH):
    store.store_many(items[k:k + BATCH])
out["bulk_s"], out["bulk_cpu"] = time.perf_counter() - started, time.process_time() - cpu
ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
rng = random.Random(5)
types = ["RELATES_TO", "LEADS_TO", "PART_OF", "DERIVED_FROM", "REINFORCES", "EXEMPLIFIES"]
pairs = [(*rng.sample(ids, 2), rng.choice(types), round(rng.uniform(0.2, 1.0), 2)) for _ in range(edges)]
started, cpu = time.perf_counter(), time.process_time()
for a, b, kind, strength in pairs:
    store.associate(a, b, type=kind, strength=strength)
out["edges_s"], out["edges_cpu"] = time.perf_counter() - started, time.process_time() - cpu
started, cpu = time.perf_counter(), time.process_time()
for item in extra[:single]:
    store.store(**item)
out["single_s"], out["single_cpu"] = time.perf_counter() - started, time.process_time() - cpu
if dump:
    # Columns that hold the wall clock or the store's own random id differ between any two stores.
    skip = {"sync_meta", "meta", "vector_calibration", "sqlite_sequence"}
    tables = [r[0] for r in store.conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
    # Hybrid-clock stamps end with the store's own random id: compared without it.
    own = (store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone() or ("-",))[0]
    digests = {}
    for table in tables:
        if table in skip:
            continue
        h = hashlib.sha256()
        for row in store.conn.execute(f'SELECT * FROM "{table}" ORDER BY 1, 2'):
            h.update(repr(row).replace(own, "<own id>").encode())
        digests[table] = h.hexdigest()[:16]
    h = hashlib.sha256()
    for row in store.conn.execute("SELECT rowid, * FROM memories_fts ORDER BY rowid"):
        h.update(repr(row).encode())
    digests["memories_fts"] = h.hexdigest()[:16]
    out["dump"] = digests
store.close()
print(json.dumps(out))
""".replace("BATCH", str(BATCH))


def make_items(n: int, extra: int, fixed: bool) -> tuple[list[dict], list[dict]]:
    from benchmarks.speed.write_stages import make_items as with_vectors
    items = with_vectors(n + extra, seed=11)
    for index, item in enumerate(items):
        if index % 3 == 0:  # every third a conversation turn: its full-text row carries its neighbours'
            item["metadata"] = {**item.get("metadata", {}), "session": f"s{index // 30}"}
        if index % 4:
            item["context"] = ("work", "home", "client-a")[index % 4 - 1]
        if fixed:  # the same ids and times in every tree, so the stored bytes can be compared
            item["id"] = str(uuid.UUID(int=index + 1, version=4))
    return items[:n], items[n:]


def run(tree: Path, items_path: Path, folder: Path, edges: int, single: int, dump: bool) -> dict:
    db = folder / f"w-{hashlib.sha1(str(tree).encode()).hexdigest()[:8]}-{os.getpid()}.db"
    return run_in_tree(tree, WORKER, db, [str(items_path), str(db), str(edges), str(single), "1" if dump else "0"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--tiers", default="10k,100k")
    parser.add_argument("--edges", type=int, default=3000)
    parser.add_argument("--single", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dump", action="store_true", help="compare every table's rows between the trees")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.trees]
    names = [str(t) for t in trees]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for tier in args.tiers.split(","):
            n = TIERS[tier]
            items_path = folder / "items.pickle"
            with open(items_path, "wb") as f:
                pickle.dump(make_items(n, args.single, args.dump), f)
            results: dict[str, list[dict]] = {name: [] for name in names}
            for round_index in range(args.rounds):
                shift = round_index % len(trees)
                for tree in trees[shift:] + trees[:shift]:
                    results[str(tree)].append(run(tree, items_path, folder, args.edges, args.single, args.dump))
            print(f"\n{tier} ({n:,} memories, {args.edges:,} edges, {args.single} single writes; "
                  f"median of {args.rounds} rounds)")
            for clock, label in (("cpu", "per CPU second of the writing process"), ("s", "per wall-clock second")):
                print(f"\n{label}\n\n| tree | store_many rows/s | edges/s | store() writes/s | rows/s ÷ first "
                      "| edges/s ÷ first | store()/s ÷ first |\n|---|---:|---:|---:|---:|---:|---:|")
                first = None
                for name in names:
                    runs = results[name]
                    counts = (n, args.edges, args.single)
                    rates = tuple(count / statistics.median(r[f"{phase}_{clock}"] for r in runs) if count else 0.0
                                  for count, phase in zip(counts, ("bulk", "edges", "single")))
                    first = first or rates
                    ratios = " | ".join(f"{r / f:.2f}" if f else "-" for r, f in zip(rates, first))
                    print(f"| {name} | {rates[0]:,.0f} | {rates[1]:,.0f} | {rates[2]:,.0f} | {ratios} |")
            if args.dump:
                dumps = {name: results[name][0]["dump"] for name in names}
                for before, after in zip(names, names[1:]):
                    differ = sorted(t for t in set(dumps[before]) | set(dumps[after])
                                    if dumps[before].get(t) != dumps[after].get(t))
                    print(f"tables whose rows differ, {before} -> {after}: {', '.join(differ) or 'none'}")


if __name__ == "__main__":
    main()
