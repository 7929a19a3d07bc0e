"""A batch of new memories logs its changes in one pass (migration 0016, storage/change_log.py).

The batch's memory_changes rows must be the ones the per-row trigger writes: change numbers
and stamp counters one step per memory in key order, the store's own replica, the clock left
where the trigger would leave it. Every other insert is still logged by the trigger, and a
batch that fails part-way leaves no memory unlogged and no mark set.
"""

from __future__ import annotations

import uuid

import apsw
import pytest

from localmem.storage import writes
from localmem.storage.database import connect, transaction
from localmem.storage.hybrid_clock import wall_ms
from localmem.storage.memory_fields import build_rows
from localmem.storage.migrations import LATEST_VERSION, migrate
from localmem.storage.statements import Statements
from tests.store_helpers import FIXED_NOW, Clock, new_store

COLUMNS = ("pk, id, content, summary, type, confidence, importance, tags, timestamp, updated_at, "
           "last_accessed, t_valid, t_invalid, archived, metadata, context, relevance_score, thread")


def items(n: int, start: int = 0) -> list[dict]:
    return [{"id": str(uuid.UUID(int=start + i + 1, version=4)), "content": f"note number {start + i}",
             "tags": [f"t{(start + i) % 3}"]} for i in range(n)]


def changes(store) -> list[tuple[int, int, str]]:
    return list(store.conn.execute("SELECT pk, seq, hlc FROM memory_changes ORDER BY pk"))


def replica(store) -> str:
    return store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]


def clock(store) -> tuple:
    return tuple(store.conn.execute("SELECT seq, hlc_wall, hlc_counter, batch_from FROM sync_clock").fetchone())


def insert_copy_of_first(store, pk: int) -> None:
    """A bare INSERT (no batch writer): memory 1's fields under key ``pk`` and a new id."""
    others = COLUMNS.replace("pk, id, ", "")
    with transaction(store.conn):
        store.conn.execute(f"INSERT INTO memories ({COLUMNS}) SELECT ?, 'raw-id', {others} FROM memories "
                           "WHERE pk = 1", (pk,))


def test_a_batch_logs_what_the_per_row_trigger_logs(tmp_path):
    """The same memories, once through store_many (the batch pass) and once inserted row by row
    by plain SQL (the trigger): the same change numbers, stamps (but for the replica) and clock."""
    batched = new_store(str(tmp_path / "a.db"))
    batched.store_many(items(40))
    batched.store_many(items(25, start=40))
    by_trigger = new_store(str(tmp_path / "b.db"))
    by_trigger.conn.execute("ATTACH ? AS a", (str(tmp_path / "a.db"),))
    with transaction(by_trigger.conn):
        for pk in range(1, 66):
            by_trigger.conn.execute(f"INSERT INTO memories ({COLUMNS}) SELECT {COLUMNS} FROM a.memories "
                                    "WHERE pk = ?", (pk,))
    mine, theirs = changes(batched), changes(by_trigger)
    assert len(mine) == len(theirs) == 65
    assert [(pk, seq, hlc[:26]) for pk, seq, hlc in mine] == [(pk, seq, hlc[:26]) for pk, seq, hlc in theirs]
    assert {hlc[27:] for _, _, hlc in mine} == {replica(batched)}
    assert clock(batched) == clock(by_trigger)
    assert clock(batched)[3] is None  # no mark left behind


def test_stamps_keep_order_across_batches_single_writes_and_a_clock_that_moves(tmp_path):
    """A later wall time restarts the counter at 0 for the batch's first memory; a clock that
    stands still keeps counting; every change number and stamp is above the one before."""
    ticking = Clock()
    store = new_store(str(tmp_path / "s.db"), clock=ticking)
    store.store_many(items(5))
    ticking.advance(seconds=3)
    store.store_many(items(4, start=5))
    store.store("a single write", tags=["x"])
    ticking.advance(seconds=-60)  # a clock set back: the stamps must still rise
    store.store_many(items(3, start=20))
    rows = changes(store)
    assert [seq for _, seq, _ in rows] == list(range(1, 14))
    stamps = [hlc for _, _, hlc in rows]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    later = wall_ms(FIXED_NOW) + 3000
    assert [s[:26] for s in stamps[5:8]] == [f"{later:015d}-{c:010d}" for c in range(3)]
    assert store.conn.execute("SELECT hlc_wall, hlc_counter FROM sync_clock").fetchone() == (later, 7)


def test_inserts_outside_a_batch_are_still_logged_by_the_trigger(tmp_path):
    store = new_store(str(tmp_path / "s.db"))
    store.store_many(items(3))
    insert_copy_of_first(store, pk=10)
    assert changes(store)[-1][:2] == (10, 4)


def test_a_batch_failing_part_way_logs_the_rows_it_wrote_and_clears_its_mark(tmp_path):
    """A caller that catches the failure and commits must not keep memories without a change
    row (sync would never send them) nor a mark that hides later inserts from the trigger."""
    store = new_store(str(tmp_path / "s.db"))
    store.store_many(items(2))
    rows = build_rows(items(4, start=10), now=FIXED_NOW, frames=1)
    rows[2] = rows[2].__class__(**{**rows[2].__dict__, "id": rows[0].id})  # the third repeats the first's id
    with transaction(store.conn):
        with pytest.raises(apsw.ConstraintError):
            writes.insert_memories(store.conn, store.sql, rows, [None] * 4, store.has_vector_index)
        assert clock(store)[3] is None
    logged = changes(store)
    present = [pk for (pk,) in store.conn.execute("SELECT pk FROM memories ORDER BY pk")]
    assert [pk for pk, _, _ in logged] == present == [1, 2, 3, 4]
    assert [seq for _, seq, _ in logged] == [1, 2, 3, 4]
    store.store("after the failure")
    assert changes(store)[-1][:2] == (5, 5)


def test_a_schema_15_store_is_upgraded_in_place(tmp_path):
    """A file written by the previous migration set keeps its change log, and both the batch
    pass and the trigger log new memories after the upgrade."""
    path = str(tmp_path / "v15.db")
    conn = connect(path)
    assert migrate(conn, Statements(), target=15) == 15
    with transaction(conn):
        for i in range(3):
            conn.execute("INSERT INTO memories (id, content, summary, type, confidence, importance, tags, "
                         "timestamp, updated_at, last_accessed, metadata) VALUES (?, ?, ?, 'Context', 0.5, "
                         "0.5, '[]', '2024-05-01T12:00:00+00:00', '2024-05-01T12:00:00+00:00', "
                         "'2024-05-01T12:00:00+00:00', '{}')", (f"old-{i}", f"old {i}", f"old {i}"))
    before = list(conn.execute("SELECT pk, seq, hlc FROM memory_changes ORDER BY pk"))
    assert [seq for _, seq, _ in before] == [1, 2, 3]
    conn.close()
    store = new_store(path)
    assert store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        LATEST_VERSION)
    assert changes(store) == before
    store.store_many(items(2))
    insert_copy_of_first(store, pk=20)
    assert [(pk, seq) for pk, seq, _ in changes(store)] == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (20, 6)]
    assert clock(store)[0] == 6 and clock(store)[3] is None


def test_migration_16_runs_again_on_a_file_set_back_a_version(tmp_path):
    """A step may run again (a file whose version was set back): its column is added once."""
    path = str(tmp_path / "s.db")
    store = new_store(path)
    store.store_many(items(2))
    store.conn.execute("UPDATE meta SET value = '15' WHERE key = 'schema_version'")
    store.close()
    store = new_store(path)
    store.store_many(items(2, start=2))
    assert [(pk, seq) for pk, seq, _ in changes(store)] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_a_batch_written_outside_a_transaction_is_logged_by_the_trigger(tmp_path):
    """Without a transaction the mark could be left set by a failed insert: no mark is set."""
    store = new_store(str(tmp_path / "s.db"))
    rows = build_rows(items(3), now=FIXED_NOW, frames=1)
    assert not store.conn.in_transaction
    writes.insert_memories(store.conn, store.sql, rows, [None] * 3, store.has_vector_index)
    assert [(pk, seq) for pk, seq, _ in changes(store)] == [(1, 1), (2, 2), (3, 3)]
    assert clock(store)[3] is None
