"""What an insert trigger costs a bulk write of memory rows: per statement, or per row.

    python benchmarks/speed/trigger_statement_cost.py [--n 10000] [--rounds 7]

Builds N of write_stages.py's memories (given vectors) into rows once, then, in a fresh store
each time and inside one transaction that is rolled back, writes the rows into ``memories``
five ways, the ways taking turns each round:

- ``one statement per row, shipped triggers``: ``executemany`` of memory_insert.sql, as
  ``store_many`` did before storage/staged_rows.py (the change log marked as a batch, so its
  trigger's ``WHEN`` is false, as in ``store_many``);
- ``one statement per row, no insert trigger``: the same with the two insert triggers dropped;
- ``one statement per row, one trigger WHEN 0``: only a trigger that never runs its body;
- ``staged, shipped triggers``: the rows into the connection's temporary staging table, then
  one ``INSERT … SELECT`` per 2,048 rows (what ``store_many`` does now);
- ``staged, no insert trigger``.

Prints the median CPU µs per row of each way (``time.process_time``: on a shared machine the
wall clock is mostly other work's). Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.speed.write_stages import make_items  # noqa: E402
from localmem import MemoryStore  # noqa: E402
from localmem.storage import staged_rows  # noqa: E402

INSERT_TRIGGERS = ("memory_changes_insert", "sync_tombstone_on_insert")
WAYS = ("one statement per row, shipped triggers", "one statement per row, no insert trigger",
        "one statement per row, one trigger WHEN 0", "staged, shipped triggers",
        "staged, no insert trigger")


def bindings(n: int, folder: Path) -> list[dict]:
    store = MemoryStore(str(folder / "rows.db"), embedder="hash")
    rows, _vectors = store._prepare(make_items(n, seed=11))
    store.close()
    out = []
    for pk, row in enumerate(rows, start=1):
        values = row.bindings()
        values["pk"] = pk
        out.append(values)
    return out


def write_once(way: str, rows: list[dict], folder: Path, index: int) -> float:
    store = MemoryStore(str(folder / f"w{index}.db"), embedder="hash")
    conn, sql = store.conn, store.sql
    if "no insert trigger" in way or "WHEN 0" in way:
        for name in INSERT_TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
    if "WHEN 0" in way:
        conn.execute("CREATE TRIGGER never AFTER INSERT ON memories WHEN 0 "
                     "BEGIN DELETE FROM sync_tombstones WHERE id = new.id; END")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(sql["change_log_batch_open"], {"first": 1})
    started = time.process_time()
    if way.startswith("staged"):
        staged_rows.write_rows(conn, sql, rows, direct=sql["memory_insert"], name="memory",
                               staged=sql["memory_insert_staged"])
    else:
        conn.executemany(sql["memory_insert"], rows)
    spent = time.process_time() - started
    conn.execute("ROLLBACK")
    store.close()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = bindings(args.n, folder)
        spent: dict[str, list[float]] = {way: [] for way in WAYS}
        index = 0
        for round_index in range(args.rounds):
            shift = round_index % len(WAYS)
            for way in WAYS[shift:] + WAYS[:shift]:
                index += 1
                spent[way].append(write_once(way, rows, folder, index))
    print(f"{args.n:,} memory rows, median of {args.rounds} rounds, CPU µs per row\n")
    print("| way | µs per row |\n|---|---:|")
    for way in WAYS:
        print(f"| {way} | {statistics.median(spent[way]) / args.n * 1e6:.2f} |")


if __name__ == "__main__":
    main()
