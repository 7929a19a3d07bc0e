"""Where one ``associate()`` call's time goes, tree against tree: pages per commit, checkpoints, statements, Python.

    python benchmarks/speed/edge_call_parts.py TREE [TREE ...] [--n 10000] [--edges 3000] [--rounds 3]

For each round, every tree runs once in its own process (``PYTHONPATH`` = that tree), in an
order that rotates each round. Each process stores writes_paired.py's first N memories (given
vectors, ``store_many`` in calls of 5,000) into a fresh file in a temporary folder, then makes
``--edges`` ``associate()`` calls between random pairs of them (one transaction each, as
writes_paired.py does) and reports, per call:

- ``CPU µs``: the writing process's CPU time (user + system), the figure writes_paired.py reports;
- ``WAL pages``: pages written to the WAL per commit (from the WAL hook's frame counts);
- ``checkpoint µs``: the CPU time of the checkpoints run after commits (the store's own
  ``WalCheckpointer`` wrapped by a timer), and how many ran;
- ``statements``: statements run per call, counted on another ``--edges`` calls with an exec
  trace (not timed);
- then this tree's Python around the SQL, each part timed alone with ``timeit`` (best of 5):
  the argument checks, the store's clock and its ISO text, an empty write transaction (its
  ``BEGIN IMMEDIATE`` … ``COMMIT`` alone, so the transaction helper's own cost is the
  difference).

Last (``--lever-rounds``, 0 for none), the levers, in the last tree's process after its own
store is built: blocks of ``--lever-edges`` calls taking turns (the order rotating), each block
with one change in place and started from an empty WAL (a TRUNCATE checkpoint, not timed, so no
block pays for the pages the previous block's schema change wrote), CPU µs per call. The last
tree must be a schema-19 tree that reads its statements through ``Statements``:

- ``as shipped``;
- ``one more page per commit``: the edge statement (``edge_upsert``) preceded by the update of a
  one-row side table: what a page that every commit writes costs, such as the clock's row or
  the top leaf of the index by change number;
- ``no stamping triggers on edges``: ``sync_edge_on_insert`` and ``sync_edge_on_update``
  dropped (they stamp only a row a bare write left unstamped; the upsert stamps its own);
- ``no edges_seq index`` (which a sync reads its edge changes by);
- ``checkpoint every 2000 WAL pages`` (``WAL_AUTOCHECKPOINT_PAGES``, 1000 as shipped);
- ``store id bound, not read from meta``: the stamp's store id as a literal in the statement.

Figures are medians over rounds; on a shared machine compare the trees with each other, not
with another run. Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common.tree_worker import run_in_tree  # noqa: E402
from benchmarks.speed.writes_paired import make_items  # noqa: E402

WORKER = r"""
import json, pickle, random, sys, time, timeit, uuid
import apsw
from localmem import MemoryStore
from localmem.storage import database
from localmem.storage import edges as edge_store
from localmem.timeparse import format_timestamp
items_path, db, edges, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
levers = rounds > 0
with open(items_path, "rb") as f:
    items = pickle.load(f)
store = MemoryStore(db, embedder="hash")
for k in range(0, len(items), 5000):
    store.store_many(items[k:k + 5000])
ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
rng = random.Random(5)
types = ["RELATES_TO", "LEADS_TO", "PART_OF", "DERIVED_FROM", "REINFORCES", "EXEMPLIFIES"]
def pairs():
    return [(*rng.sample(ids, 2), rng.choice(types), round(rng.uniform(0.2, 1.0), 2)) for _ in range(edges)]
out = {}
if levers:  # the levers, in blocks taking turns: each a change to the statement, the schema or a setting
    store.conn.execute("CREATE TABLE bench_side (id INTEGER PRIMARY KEY, n INTEGER); "
                       "INSERT INTO bench_side VALUES (1, 0)")
    shipped = store.sql["edge_upsert"]
    schema = dict(store.conn.execute("SELECT name, sql FROM sqlite_schema WHERE name IN "
                                     "('sync_edge_on_insert', 'sync_edge_on_update', 'edges_seq')"))
    own = store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    bound = shipped.replace("(SELECT value FROM meta WHERE key = 'store_id')", "'" + own + "'")
    assert bound != shipped
    variants = {"as shipped": (shipped, (), 1000),
                "one more page per commit": ("UPDATE bench_side SET n = n + 1 WHERE id = 1;\n" + shipped, (), 1000),
                "no stamping triggers on edges": (shipped, ("sync_edge_on_insert", "sync_edge_on_update"), 1000),
                "no edges_seq index": (shipped, ("edges_seq",), 1000),
                "checkpoint every 2000 WAL pages": (shipped, (), 2000),
                "store id bound, not read from meta": (bound, (), 1000)}
    names = list(variants)
    times = {name: [] for name in names}
    for block in range(rounds):
        shift = block % len(names)
        for name in names[shift:] + names[:shift]:
            statement, dropped, pages = variants[name]
            store.sql._cache[("edge_upsert", ())] = statement  # the statement associate() reads
            with database.transaction(store.conn):
                for dropped_name in dropped:
                    kind = "INDEX" if dropped_name == "edges_seq" else "TRIGGER"
                    store.conn.execute(f"DROP {kind} {dropped_name}")
            database.WAL_AUTOCHECKPOINT_PAGES = pages  # read by the store's WAL hook on every commit
            chunk = pairs()
            store.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)  # each block from an empty WAL
            started = time.process_time()
            for a, b, kind, strength in chunk:
                store.associate(a, b, type=kind, strength=strength)
            times[name].append((time.process_time() - started) / len(chunk) * 1e6)
            database.WAL_AUTOCHECKPOINT_PAGES = 1000
            with database.transaction(store.conn):
                for dropped_name in dropped:
                    store.conn.execute(schema[dropped_name])
    store.sql._cache[("edge_upsert", ())] = shipped
    out = {name: sorted(values)[len(values) // 2] for name, values in times.items()}
    store.close()
    print(json.dumps(out))
    sys.exit(0)
checkpointer = database.WalCheckpointer(store.conn.execute("PRAGMA page_size").fetchone()[0])
state = {"last": 0, "frames": 0, "commits": 0, "cp_cpu": 0.0}
def hook(conn, name, pages):
    grew = pages - state["last"] if pages >= state["last"] else pages
    state["last"] = pages
    state["frames"] += grew
    state["commits"] += 1
    started = time.process_time()
    result = checkpointer(conn, name, pages)
    state["cp_cpu"] += time.process_time() - started
    return result
store.conn.set_wal_hook(hook)
timed = pairs()
started = time.process_time()
for a, b, kind, strength in timed:
    store.associate(a, b, type=kind, strength=strength)
cpu = time.process_time() - started
out["cpu_us"] = cpu / edges * 1e6
out["wal_pages"] = state["frames"] / max(1, state["commits"])
out["checkpoint_us"] = state["cp_cpu"] / edges * 1e6
out["checkpoints"] = checkpointer.checkpoints
count = [0]
def trace(cursor, sql, bindings):
    count[0] += 1
    return True
store.conn.exec_trace = trace
for a, b, kind, strength in pairs():
    store.associate(a, b, type=kind, strength=strength)
store.conn.exec_trace = None
out["statements"] = count[0] / edges
first, second = str(uuid.uuid4()), str(uuid.uuid4())
now = store.now()
def best(call, number=20000):
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6
out["py_validate"] = best(lambda: edge_store.validate_association(first, second, "LEADS_TO", 0.5, {}))
out["py_clock"] = best(lambda: format_timestamp(store.now()))
def empty_transaction():
    with database.transaction(store.conn):
        pass
def bare():
    store.conn.execute("BEGIN IMMEDIATE")
    store.conn.execute("COMMIT")
out["py_transaction"] = best(empty_transaction, 5000)
out["py_bare"] = best(bare, 5000)
store.close()
print(json.dumps(out))
"""

COLUMNS = (("cpu_us", "CPU µs per call", 1), ("wal_pages", "WAL pages per commit", 2),
           ("checkpoint_us", "checkpoint CPU µs per call", 1), ("checkpoints", "checkpoints", 0),
           ("statements", "statements per call", 1), ("py_validate", "argument checks µs", 2),
           ("py_clock", "clock + ISO text µs", 2), ("py_transaction", "empty transaction µs", 2),
           ("py_bare", "bare BEGIN/COMMIT µs", 2))


def run(tree: Path, items_path: Path, folder: Path, edges: int, lever_rounds: int = 0) -> dict:
    db = folder / f"e-{abs(hash(str(tree)))}-{os.getpid()}.db"
    return run_in_tree(tree, WORKER, db, [str(items_path), str(db), str(edges), str(lever_rounds)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lever-rounds", type=int, default=9, help="0: no lever blocks")
    parser.add_argument("--lever-edges", type=int, default=1000, help="associate() calls per lever block")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.trees]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items_path = folder / "items.pickle"
        with open(items_path, "wb") as f:
            pickle.dump(make_items(args.n, 0, False)[0], f)
        results: dict[Path, list[dict]] = {tree: [] for tree in trees}
        for round_index in range(args.rounds):
            shift = round_index % len(trees)
            for tree in trees[shift:] + trees[:shift]:
                results[tree].append(run(tree, items_path, folder, args.edges))
        levers = run(trees[-1], items_path, folder, args.lever_edges, args.lever_rounds) if args.lever_rounds else {}
    print(f"{args.n:,} memories, {args.edges:,} associate() calls per process, median of {args.rounds} rounds\n")
    print("| tree | " + " | ".join(label for _, label, _ in COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for tree in trees:
        cells = [f"{statistics.median(r[key] for r in results[tree]):.{digits}f}" for key, _, digits in COLUMNS]
        print(f"| {tree} | " + " | ".join(cells) + " |")
    if levers:
        base = levers["as shipped"]
        print(f"\nLevers in {trees[-1]} ({args.lever_edges:,} calls per block, blocks taking turns, median of "
              f"{args.lever_rounds}; CPU µs per call)\n\n| variant | µs | against as shipped |\n|---|---:|---:|")
        for name, value in levers.items():
            print(f"| {name} | {value:.1f} | {value - base:+.1f} |")


if __name__ == "__main__":
    main()
