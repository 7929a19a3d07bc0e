"""What an edge's change tracking costs, part by part: the edge write swapped for cut-down versions.

    python benchmarks/speed/edge_log_costs.py [--n 5000] [--edges 1500] [--rounds 5]

One store of N of write_stages.py's memories (given vectors) in a temporary folder. Each round
runs every variant in turn (the order rotating round by round), each on its own fresh random
pairs. A variant is the statement ``associate()`` writes the edge with (``edge_upsert``) and the
edge triggers installed while it runs:

- ``as shipped``: schema 19: the upsert steps the clock and writes the edge with its change
  number and stamp in its own row, indexed by change number (``edges_seq``);
- ``schema 18's log``: the edge alone, and a trigger writing a second row per edge into a log
  keyed by the two memories' text ids and indexed by change number (a copy of the log and
  trigger of migrations 0009/0015 that this schema replaced);
- ``row stamp, no seq index``: as shipped without the change-number index (which a sync needs);
- ``clock read, not written``: a candidate not shipped (branch edges4-candidate-no-clock-write):
  the upsert writes only the edge's row, its number one above the last entries of the edges' and
  the removals' seq indexes and the clock's, its stamp the later of now and the clock's wall time
  (counter 0) or one above the edge's previous version; it reads the clock row but does not write
  it. It breaks the order of one replica's stamps across kinds (docs/results/history.md);
- ``clock folded from the index tops``: another candidate not shipped (branch
  edges5-fold-candidate, without its skew check): the upsert writes only the edge's row; its
  number one above the clock's and the tops of the edges' and the removals' seq indexes, its
  stamp one step past the latest of the clock's stamp and the stamps of the two rows at those
  tops (the clock's contract holds when every other clock step folds those tops into the clock
  row first: docs/sync.md);
- ``integer stamp``: as shipped, the stamp one integer (wall ms << 16 | counter) in a column of its
  own (added to the benchmark's store) instead of the 59-character text;
- ``folded clock and integer stamp``: the two together;
- ``clock step only``: the stamped clock step, then the edge alone;
- ``no tracking``: the edge alone, as the previous release wrote it.

Per variant: ``associate()`` one call per transaction as a user pays it (CPU µs per edge, the
median over rounds), the same edges' upserts in one transaction (the statements' work without
the commits), and SQLite's own time per statement in the ``associate()`` calls (its profile
hook, whose clock ticks in milliseconds: summed over every call and divided, so read it as an
average). The difference between a variant and ``no tracking`` is its price. Last,
``associate()``'s look-up alone, as shipped and as the join it replaced. The store's edge
triggers are put back before it closes. Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.speed.write_stages import make_items  # noqa: E402
from localmem import MemoryStore  # noqa: E402
from localmem.storage.database import transaction  # noqa: E402

CLOCK_STEP = """UPDATE sync_clock SET seq = seq + 1,
    hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
    hlc_wall = max(hlc_wall, t.now_ms)
FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;"""
PLAIN_UPSERT = """INSERT INTO edges (src, dst, type, strength, updated_at, properties)
VALUES (:src, :dst, :type, :strength, :updated_at, :properties)
ON CONFLICT (src, type, dst) DO UPDATE SET strength = excluded.strength,
    updated_at = excluded.updated_at, properties = excluded.properties;"""
STAMP = "printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))"
OLD_LOG = """CREATE TABLE IF NOT EXISTS bench_edge_log (
    src_id TEXT NOT NULL, type TEXT NOT NULL, dst_id TEXT NOT NULL, deleted_at TEXT,
    seq INTEGER NOT NULL, hlc TEXT, PRIMARY KEY (src_id, type, dst_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bench_edge_log_seq ON bench_edge_log (seq);"""
OLD_TRIGGER = f"""CREATE TRIGGER bench_edge_log_on_insert AFTER INSERT ON edges BEGIN
    {CLOCK_STEP}
    INSERT INTO bench_edge_log (src_id, type, dst_id, deleted_at, seq, hlc)
    SELECT a.id, new.type, b.id, NULL, c.seq, {STAMP}
    FROM memories AS a, memories AS b, sync_clock AS c WHERE a.pk = new.src AND b.pk = new.dst AND c.id = 1
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq, hlc = excluded.hlc;
END;"""
# The candidate's upsert (the removals' table exists on every schema-19 store; the skew bound inlined).
CLOCK_READ_UPSERT = """INSERT INTO edges (src, dst, type, strength, updated_at, properties, seq, hlc)
SELECT :src, :dst, :type, :strength, :updated_at, :properties, s.seq,
       coalesce(:hlc, CASE WHEN s.before >= s.stamp AND substr(s.before, 1, 15) + 0 <= s.now_ms + 86400000
                           THEN printf('%015d-%010d-%s', substr(s.before, 1, 15) + 0,
                                       substr(s.before, 17, 10) + 1, s.store)
                           ELSE s.stamp END)
FROM (SELECT max(c.seq, coalesce((SELECT max(seq) FROM edges), 0),
                 coalesce((SELECT max(seq) FROM sync_edge_tombstones), 0)) + 1 AS seq,
             printf('%015d-%010d-%s', max(n.now_ms, c.hlc_wall), 0, n.store) AS stamp,
             n.now_ms, n.store,
             (SELECT t.hlc FROM sync_edge_tombstones AS t
              WHERE t.src_id = (SELECT id FROM memories WHERE pk = :src) AND t.type = :type
                AND t.dst_id = (SELECT id FROM memories WHERE pk = :dst)) AS before
      FROM sync_clock AS c, (SELECT coalesce(:now_ms, localmem_wall_ms()) AS now_ms,
                                    (SELECT value FROM meta WHERE key = 'store_id') AS store) AS n
      WHERE c.id = 1) AS s
WHERE true
ON CONFLICT (src, type, dst) DO UPDATE SET
    strength = excluded.strength,
    updated_at = excluded.updated_at,
    properties = excluded.properties,
    seq = excluded.seq,
    hlc = CASE WHEN :hlc IS NOT NULL OR edges.hlc IS NULL OR edges.hlc < excluded.hlc
                    OR substr(edges.hlc, 1, 15) + 0 > coalesce(:now_ms, localmem_wall_ms()) + 86400000
               THEN excluded.hlc
               ELSE printf('%015d-%010d-%s', substr(edges.hlc, 1, 15) + 0, substr(edges.hlc, 17, 10) + 1,
                           substr(excluded.hlc, 28)) END;"""
# Lever 2 (branch edges5-fold-candidate; not shipped): the clock row read, not written; the edge's
# number one above the clock's and the two seq indexes' tops, its stamp one step past the latest of
# the clock's stamp and the stamps of the rows at those two tops (every other clock step would fold
# the tops into the clock row first: docs/sync.md).
FOLD_UPSERT = """INSERT INTO edges (src, dst, type, strength, updated_at, properties, seq, hlc)
SELECT :src, :dst, :type, :strength, :updated_at, :properties, s.seq,
       coalesce(:hlc, CASE WHEN s.now_ms > substr(s.top, 1, 15) + 0
                           THEN printf('%015d-%010d-%s', s.now_ms, 0, s.store)
                           ELSE printf('%015d-%010d-%s', substr(s.top, 1, 15) + 0,
                                       substr(s.top, 17, 10) + 1, s.store) END)
FROM (SELECT max(c.seq, coalesce(e.seq, 0), coalesce(t.seq, 0)) + 1 AS seq,
             max(printf('%015d-%010d', c.hlc_wall, c.hlc_counter), coalesce(substr(e.hlc, 1, 26), ''),
                 coalesce(substr(t.hlc, 1, 26), '')) AS top,
             coalesce(:now_ms, localmem_wall_ms()) AS now_ms,
             (SELECT value FROM meta WHERE key = 'store_id') AS store
      FROM sync_clock AS c
      LEFT JOIN (SELECT seq, hlc FROM edges ORDER BY seq DESC LIMIT 1) AS e
      LEFT JOIN (SELECT seq, hlc FROM sync_edge_tombstones ORDER BY seq DESC LIMIT 1) AS t
      WHERE c.id = 1) AS s
WHERE true
ON CONFLICT (src, type, dst) DO UPDATE SET strength = excluded.strength, updated_at = excluded.updated_at,
    properties = excluded.properties, seq = excluded.seq, hlc = excluded.hlc;"""
# Lever 3 (not shipped): the stamp as one integer, wall ms << 16 | counter, in a column of its own
# (``hlc_int``, added for this benchmark: ``hlc`` has text affinity) with ``hlc`` left NULL; the
# replica would be kept apart (NULL for this store's own changes).
INT_STAMP_UPSERT = """UPDATE sync_clock SET seq = seq + 1,
    hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
    hlc_wall = max(hlc_wall, t.now_ms)
FROM (SELECT coalesce(:now_ms, localmem_wall_ms()) AS now_ms) AS t WHERE id = 1;
INSERT INTO edges (src, dst, type, strength, updated_at, properties, seq, hlc_int)
SELECT :src, :dst, :type, :strength, :updated_at, :properties, c.seq,
       coalesce(:hlc, (c.hlc_wall << 16) | c.hlc_counter)
FROM sync_clock AS c WHERE c.id = 1
ON CONFLICT (src, type, dst) DO UPDATE SET strength = excluded.strength, updated_at = excluded.updated_at,
    properties = excluded.properties, seq = excluded.seq, hlc = NULL, hlc_int = excluded.hlc_int;"""
# Levers 2 and 3 together: in integers the HLC step is max(now << 16, latest + 1).
FOLD_INT_UPSERT = """INSERT INTO edges (src, dst, type, strength, updated_at, properties, seq, hlc_int)
SELECT :src, :dst, :type, :strength, :updated_at, :properties,
       max(c.seq, coalesce(e.seq, 0), coalesce(t.seq, 0)) + 1,
       coalesce(:hlc, max(coalesce(:now_ms, localmem_wall_ms()) << 16,
                          max((c.hlc_wall << 16) | c.hlc_counter, coalesce(e.hlc_int, 0), coalesce(t.hlc, 0)) + 1))
FROM sync_clock AS c
LEFT JOIN (SELECT seq, hlc_int FROM edges ORDER BY seq DESC LIMIT 1) AS e
LEFT JOIN (SELECT seq, hlc FROM sync_edge_tombstones ORDER BY seq DESC LIMIT 1) AS t
WHERE c.id = 1
ON CONFLICT (src, type, dst) DO UPDATE SET strength = excluded.strength, updated_at = excluded.updated_at,
    properties = excluded.properties, seq = excluded.seq, hlc = NULL, hlc_int = excluded.hlc_int;"""
# associate()'s look-up as schema 19 first shipped it (a missing memory: no row).
JOINED_LOOKUP = """SELECT a.pk, b.pk, e.strength FROM memories AS a JOIN memories AS b ON b.id = :second
LEFT JOIN edges AS e ON e.src = a.pk AND e.type = :type AND e.dst = b.pk WHERE a.id = :first"""
EDGE_TRIGGERS = ("sync_edge_on_insert", "sync_edge_on_update")
# name: (upsert statement, None for the store's own; keep the store's triggers; keep edges_seq; extra trigger)
VARIANTS: dict[str, tuple[str | None, bool, bool, str]] = {
    "as shipped": (None, True, True, ""),
    "schema 18's log": (PLAIN_UPSERT, False, False, OLD_TRIGGER),
    "row stamp, no seq index": (None, True, False, ""),
    "clock read, not written": (CLOCK_READ_UPSERT, True, True, ""),
    "clock folded from the index tops": (FOLD_UPSERT, True, True, ""),
    "integer stamp": (INT_STAMP_UPSERT, True, True, ""),
    "folded clock and integer stamp": (FOLD_INT_UPSERT, True, True, ""),
    "clock step only": (CLOCK_STEP + PLAIN_UPSERT, False, False, ""),
    "no tracking": (PLAIN_UPSERT, False, False, ""),
}


def install(store: MemoryStore, variant: tuple[str | None, bool, bool, str], shipped: dict[str, str]) -> None:
    """Put the variant's statement and triggers in place (the store's own when ``shipped``)."""
    statement, triggers, index, extra = variant
    # The store reads each statement through its Statements cache: the variant's text goes there.
    store.sql._cache[("edge_upsert", ())] = shipped["edge_upsert"] if statement is None else statement
    with transaction(store.conn):
        for name in (*EDGE_TRIGGERS, "bench_edge_log_on_insert", "edges_seq"):
            kind = "INDEX" if name == "edges_seq" else "TRIGGER"
            store.conn.execute(f"DROP {kind} IF EXISTS {name}")
        if triggers:
            for name in EDGE_TRIGGERS:
                store.conn.execute(shipped[name])
        if index:
            store.conn.execute(shipped["edges_seq"])
        if extra:
            store.conn.execute(extra)


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
        shipped = {name: sql for name, sql in store.conn.execute(
            "SELECT name, sql FROM sqlite_schema WHERE name IN (?, ?, 'edges_seq')", EDGE_TRIGGERS)}
        shipped["edge_upsert"] = store.sql["edge_upsert"]
        with transaction(store.conn):
            for _ in store.conn.execute(OLD_LOG):
                pass
            store.conn.execute("ALTER TABLE edges ADD COLUMN hlc_int INTEGER")  # the integer-stamp variants' column
        ids = [row[0] for row in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
        pks = list(range(1, args.n + 1))
        rng = random.Random(5)
        names = list(VARIANTS)
        per_call: dict[str, list[float]] = {name: [] for name in names}
        one_tx: dict[str, list[float]] = {name: [] for name in names}
        statement_ns: dict[str, dict[str, int]] = {name: defaultdict(int) for name in names}
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                install(store, VARIANTS[name], shipped)
                pairs = [rng.sample(ids, 2) for _ in range(args.edges)]
                started = time.process_time()
                for first, second in pairs:
                    store.associate(first, second)
                per_call[name].append((time.process_time() - started) / args.edges * 1e6)
                # Then the statements' own time, on other pairs (the hook's cost kept out of the above).
                profile = statement_ns[name]
                store.conn.set_profile(lambda sql, ns, profile=profile: profile.__setitem__(
                    _label(sql), profile[_label(sql)] + ns))
                for first, second in (rng.sample(ids, 2) for _ in range(args.edges)):
                    store.associate(first, second)
                store.conn.set_profile(None)
                key_pairs = [rng.sample(pks, 2) for _ in range(args.edges)]
                upsert = store.sql["edge_upsert"]
                started = time.process_time()
                with transaction(store.conn):
                    for src, dst in key_pairs:
                        store.conn.execute(upsert, {
                            "src": src, "dst": dst, "type": "LEADS_TO", "strength": 0.5,
                            "updated_at": "2025-01-01T00:00:00+00:00", "properties": "{}", "hlc": None, "now_ms": None})
                one_tx[name].append((time.process_time() - started) / args.edges * 1e6)
        install(store, VARIANTS["as shipped"], shipped)
        store.sql._cache.pop(("edge_upsert", ()), None)
        lookups = time_lookups(store, ids, args.edges, args.rounds, rng)
        store.close()
    base_call, base_tx = statistics.median(per_call["no tracking"]), statistics.median(one_tx["no tracking"])
    print(f"{args.n:,} memories, {args.edges:,} edges per variant and round, median of {args.rounds} rounds "
          "(CPU µs per edge)\n")
    print("| variant | associate(), one per transaction | price | upserts in one transaction | price |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        call, tx = statistics.median(per_call[name]), statistics.median(one_tx[name])
        print(f"| {name} | {call:.1f} | {call - base_call:+.1f} | {tx:.1f} | {tx - base_tx:+.1f} |")
    calls = args.edges * args.rounds
    labels = sorted({label for profile in statement_ns.values() for label in profile},
                    key=lambda label: -statement_ns["as shipped"].get(label, 0))
    print("\nSQLite's time per statement in the associate() calls (µs per edge, every round):\n")
    print("| statement | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label in labels:
        cells = [f"{statement_ns[name].get(label, 0) / calls / 1000:.2f}" for name in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nassociate()'s look-up alone (CPU µs per call, median of the rounds, the forms taking turns):\n")
    print("| look-up | µs |\n|---|---:|")
    for name, value in lookups.items():
        print(f"| {name} | {value:.2f} |")


def time_lookups(store: MemoryStore, ids: list[str], calls: int, rounds: int,
                 rng: random.Random) -> dict[str, float]:
    """``associate()``'s look-up (the two memories' keys and their edge's strength) in each form,
    taking turns on the same random pairs: CPU µs per call, the median over rounds."""
    forms = {"as shipped (a scalar subquery per key)": store.sql["edge_ends_strength"],
             "the join of memories with itself": JOINED_LOOKUP}
    times: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(rounds):
        args = [{"first": a, "second": b, "type": "LEADS_TO"} for a, b in (rng.sample(ids, 2) for _ in range(calls))]
        for name, statement in forms.items():
            started = time.process_time()
            for bound in args:
                store.conn.execute(statement, bound).fetchone()
            times[name].append((time.process_time() - started) / calls * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def _label(sql: str) -> str:
    """A statement's name in the tables: its first line of SQL (comments skipped), shortened."""
    lines = [line.strip() for line in sql.splitlines() if line.strip() and not line.strip().startswith("--")]
    first = lines[0] if lines else sql.strip()
    return first[:60].replace("|", "/")


if __name__ == "__main__":
    main()
