"""What an edge's sync log costs, part by part: the edge-insert trigger swapped for cut-down versions.

    python benchmarks/speed/edge_log_costs.py [--n 5000] [--edges 1500] [--rounds 5]

One store of N of write_stages.py's memories (given vectors) in a temporary folder. Each round
runs every variant of the ``sync_edge_on_insert`` trigger in turn (the order rotating round by
round), each on its own fresh random pairs:

- ``as shipped``: the trigger of migration 0015 (clock step with the hybrid-clock stamp, the
  log row upserted by the two memories' text ids, with its stamp);
- ``no stamp``: the same log row without the stamp, the clock step without the wall clock
  (migration 0009's trigger);
- ``integer-keyed log``: the stamped log row keyed by the two memories' integer keys in a
  table of its own (what keying the log by ``pk`` would leave);
- ``clock step only``: the stamped clock step, no log row;
- ``counter only``: ``UPDATE sync_clock SET seq = seq + 1``, no log row;
- ``no trigger``: the edge alone, as the previous release wrote it.

Per variant, ``associate()`` one call per transaction as a user pays it (CPU µs per edge, the
median over rounds: the trigger's statements and the pages each commit writes), and the same
edges inserted in one transaction (the statements' work alone). The difference between a
variant and ``no trigger`` is its price. Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import random
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
from localmem.storage.database import transaction  # noqa: E402

_CLOCK_STEP = """UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;"""
_STAMP = "printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))"
TRIGGER = "CREATE TRIGGER sync_edge_on_insert AFTER INSERT ON edges BEGIN {body} END;"
VARIANTS: dict[str, str | None] = {
    "as shipped": None,  # read from the store
    "no stamp": """UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
        INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq)
        SELECT a.id, new.type, b.id, NULL, (SELECT seq FROM sync_clock WHERE id = 1)
        FROM memories AS a, memories AS b WHERE a.pk = new.src AND b.pk = new.dst
        ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq;""",
    "integer-keyed log": f"""{_CLOCK_STEP}
        INSERT INTO bench_edge_log_pk (src, type, dst, deleted_at, seq, hlc)
        SELECT new.src, new.type, new.dst, NULL, c.seq, {_STAMP} FROM sync_clock AS c WHERE c.id = 1
        ON CONFLICT (src, type, dst) DO UPDATE SET deleted_at = NULL, seq = excluded.seq, hlc = excluded.hlc;""",
    "clock step only": _CLOCK_STEP,
    "counter only": "UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;",
    "no trigger": "",
}
PK_LOG = """CREATE TABLE IF NOT EXISTS bench_edge_log_pk (
    src INTEGER NOT NULL, type TEXT NOT NULL, dst INTEGER NOT NULL, deleted_at TEXT,
    seq INTEGER NOT NULL, hlc TEXT, PRIMARY KEY (src, type, dst)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bench_edge_log_pk_seq ON bench_edge_log_pk (seq);"""


def install(store: MemoryStore, body: str) -> None:
    with transaction(store.conn):
        store.conn.execute("DROP TRIGGER IF EXISTS sync_edge_on_insert")
        if body:
            store.conn.execute(TRIGGER.format(body=body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--edges", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "edges.db", embedder="hash")
        items = make_items(args.n)
        for start in range(0, len(items), 5000):
            store.store_many(items[start:start + 5000])
        shipped = store.conn.execute(
            "SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = 'sync_edge_on_insert'").fetchone()[0]
        bodies = {name: (shipped.split("BEGIN", 1)[1].rsplit("END", 1)[0] if body is None else body)
                  for name, body in VARIANTS.items()}
        with transaction(store.conn):
            for _ in store.conn.execute(PK_LOG):
                pass
        ids = [row[0] for row in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
        pks = list(range(1, args.n + 1))
        rng = random.Random(5)
        names = list(VARIANTS)
        per_call: dict[str, list[float]] = {name: [] for name in names}
        one_tx: dict[str, list[float]] = {name: [] for name in names}
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                install(store, bodies[name])
                pairs = [rng.sample(ids, 2) for _ in range(args.edges)]
                started = time.process_time()
                for first, second in pairs:
                    store.associate(first, second)
                per_call[name].append((time.process_time() - started) / args.edges * 1e6)
                key_pairs = [rng.sample(pks, 2) for _ in range(args.edges)]
                started = time.process_time()
                with transaction(store.conn):
                    for src, dst in key_pairs:
                        store.conn.execute(
                            "INSERT INTO edges (src, dst, type, strength, updated_at, properties) "
                            "VALUES (?, ?, 'LEADS_TO', 0.5, '2025-01-01T00:00:00+00:00', '{}') "
                            "ON CONFLICT DO NOTHING", (src, dst))
                one_tx[name].append((time.process_time() - started) / args.edges * 1e6)
        install(store, bodies["as shipped"])
        store.close()
    base_call, base_tx = statistics.median(per_call["no trigger"]), statistics.median(one_tx["no trigger"])
    print(f"{args.n:,} memories, {args.edges:,} edges per variant and round, median of {args.rounds} rounds "
          "(CPU µs per edge)\n")
    print("| trigger variant | associate(), one per transaction | price | insert in one transaction | price |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        call, tx = statistics.median(per_call[name]), statistics.median(one_tx[name])
        print(f"| {name} | {call:.1f} | {call - base_call:+.1f} | {tx:.1f} | {tx - base_tx:+.1f} |")


if __name__ == "__main__":
    main()
