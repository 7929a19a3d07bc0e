"""Hybrid logical clocks (issue 42, item 1) and edges that travel with their memories (item 3).

Every memory change, tombstone and edge-log entry carries a stamp (wall ms, counter, replica)
written by the change-log triggers; a sync carries stamps unchanged, moves the receiving
clock past them (within a 24 h skew bound), and orders changes by them, not by ``updated_at``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from localmem import MemoryStore
from localmem.replication.hlc import MAX_SKEW_MS, STAMP, stamp_key
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from localmem.storage.hybrid_clock import wall_ms
from localmem.storage.database import connect, transaction
from localmem.storage.migrations import migrate
from localmem.storage.statements import Statements

FAR = "9999-12-31T23:59:59+00:00"


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def skewed(path, offset: timedelta) -> MemoryStore:
    return MemoryStore(path, embedder="hash", clock=lambda: datetime.now(timezone.utc) + offset)


def stamp_of(store: MemoryStore, memory_id: str) -> str:
    return store.conn.execute("SELECT c.hlc FROM memory_changes c JOIN memories m ON m.pk = c.pk "
                              "WHERE m.id = ?", (memory_id,)).fetchone()[0]


def clock_of(store: MemoryStore) -> tuple[int, int]:
    return tuple(store.conn.execute("SELECT hlc_wall, hlc_counter FROM sync_clock").fetchone())


def store_id(store: MemoryStore) -> str:
    return store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]


def edge_log(store: MemoryStore) -> dict[tuple[str, str, str], tuple[str | None, str]]:
    """Every edge's (removal time, stamp) by its ends' ids: the edge's own row while it exists
    (schema 19), else its tombstone."""
    removed = {(s, t, d): (deleted, hlc) for s, t, d, deleted, hlc in store.conn.execute(
        "SELECT src_id, type, dst_id, deleted_at, hlc FROM sync_edge_tombstones")}
    return {**removed, **{(s, t, d): (None, hlc) for s, t, d, hlc in store.conn.execute(
        "SELECT a.id, e.type, b.id, e.hlc FROM edges e JOIN memories a ON a.pk = e.src "
        "JOIN memories b ON b.pk = e.dst")}}


def tombstone(store: MemoryStore, memory_id: str) -> tuple[str, str]:
    return store.conn.execute("SELECT deleted_updated_at, deleted_hlc FROM sync_tombstones WHERE id = ?",
                              (memory_id,)).fetchone()


def edges(store: MemoryStore) -> set[tuple[str, str, str]]:
    return set(store.conn.execute("SELECT a.id, e.type, b.id FROM edges e JOIN memories a ON a.pk = e.src "
                                  "JOIN memories b ON b.pk = e.dst"))


def test_every_change_is_stamped_in_order_by_its_replica(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a:
        first, second = a.store("First note"), a.store("Second note")
        stamps = [stamp_of(a, first), stamp_of(a, second)]
        a.associate(first, second, "RELATES_TO", 0.5)
        stamps.append(edge_log(a)[(first, "RELATES_TO", second)][1])
        a.update(first, content="First note, edited")
        stamps.append(stamp_of(a, first))
        a.delete(second)
        tomb_hlc, deleted_hlc = a.conn.execute(
            "SELECT hlc, deleted_hlc FROM sync_tombstones WHERE id = ?", (second,)).fetchone()
        removal = edge_log(a)[(first, "RELATES_TO", second)]
        stamps += [removal[1], tomb_hlc]
        assert all(STAMP.fullmatch(s) and s.endswith(store_id(a)) for s in stamps)
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert deleted_hlc == stamps[1]  # the tombstone names the stamp of the version it deleted
        assert removal[0] is not None  # the memory's deletion logged its edge's removal


def test_a_received_stamp_moves_the_clock_past_it(tmp_path):
    with skewed(tmp_path / "ahead.db", timedelta(hours=3)) as ahead, \
            MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = ahead.store("Stamped three hours ahead")
        sync(ahead, b)
        assert stamp_of(b, memory) == stamp_of(ahead, memory)  # carried unchanged
        later = b.store("Written here after the sync")
        assert stamp_key(stamp_of(b, later), None) > stamp_key(stamp_of(ahead, memory), None)


def test_concurrent_edits_are_ordered_by_the_clock_not_by_updated_at(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = a.store("The rota moves to Thursdays")
        sync(a, b)
        b.update(memory, content="Rota: Thursdays (stamped 9999)", updated_at=FAR)  # first
        a.update(memory, content="Rota: Fridays")  # later, by both replicas' clocks
        summary = sync(a, b)
        assert len(summary.conflicts) == 1
        copy = summary.conflicts[0]["kept_as"]
        for store in (a, b):
            assert store.get(memory)["content"] == "Rota: Fridays"
            assert store.get(copy)["content"] == "Rota: Thursdays (stamped 9999)"  # kept, superseded


def test_a_clock_beyond_the_skew_bound_drags_nothing_and_orders_nothing(tmp_path):
    with skewed(tmp_path / "broken.db", timedelta(days=30)) as broken, \
            MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = b.store("Standup at 9:30")
        sync(broken, b)
        b.update(memory, content="Standup at 9:45")
        broken.update(memory, content="Standup at 10:00")  # later by the wall clock: 30 days ahead
        summary = sync(broken, b)
        assert clock_of(b)[0] <= wall_ms(datetime.now(timezone.utc)) + MAX_SKEW_MS  # not dragged
        assert len(summary.conflicts) == 1
        for store in (broken, b):
            assert store.get(memory)["content"] == "Standup at 9:45"
            assert store.get(summary.conflicts[0]["kept_as"])["content"] == "Standup at 10:00"


def test_an_edit_made_after_seeing_a_skewed_version_beats_a_concurrent_one_with_a_later_wall(tmp_path):
    """Causal order, which a wall clock gets wrong: b's edit was made after it saw the version
    a (three hours ahead) wrote; c's, an hour ahead, was made without seeing it."""
    with skewed(tmp_path / "a.db", timedelta(hours=3)) as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b, \
            skewed(tmp_path / "c.db", timedelta(hours=1)) as c:
        memory = b.store("Release on Monday")
        sync(b, c)
        sync(a, b)
        a.update(memory, content="Release on Tuesday")
        sync(a, b)
        b.update(memory, content="Release on Wednesday")  # after seeing Tuesday
        c.update(memory, content="Release on Thursday")  # without seeing either; c's wall is later than b's
        summary = sync(b, c)
        assert [conflict["id"] for conflict in summary.conflicts] == [memory]
        for store in (b, c):
            assert store.get(memory)["content"] == "Release on Wednesday"
            assert store.get(summary.conflicts[0]["kept_as"])["content"] == "Release on Thursday"


def test_a_far_future_updated_at_resurrects_nothing_across_three_stores(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b, \
            MemoryStore(tmp_path / "c.db", embedder="hash") as c:
        memory = a.store("A note from the far future", updated_at=FAR)
        sync(a, b)
        sync(b, c)
        c.delete(memory)
        for _ in range(3):
            for x, y in ((a, b), (b, c), (a, c)):
                sync(x, y)
        assert all(memory not in {r[0] for r in s.conn.execute("SELECT id FROM memories")} for s in (a, b, c))


def test_deleting_a_memory_removes_its_edges_on_the_peer_through_the_edge_log(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        x, y, z = a.store("Project Kestrel"), a.store("Kestrel uses Postgres"), a.store("Kestrel ships in May")
        a.associate(x, y, "RELATES_TO", 0.6)
        a.associate(z, x, "RELATES_TO", 0.4)
        sync(a, b)
        assert len(edges(b)) == 2
        a.delete(x)
        log = edge_log(a)
        assert all(log[key][0] is not None for key in ((x, "RELATES_TO", y), (z, "RELATES_TO", x)))
        summary = sync(a, b)
        assert summary.deleted_on_peer == 1 and edges(b) == set()
        assert all(edge_log(b)[key][0] is not None for key in ((x, "RELATES_TO", y), (z, "RELATES_TO", x)))


def test_a_memory_kept_over_a_delete_comes_back_with_its_edges_everywhere(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b, \
            MemoryStore(tmp_path / "c.db", embedder="hash") as c:
        x, y, z = a.store("Project Kestrel"), a.store("Kestrel uses Postgres"), a.store("Kestrel ships in May")
        a.associate(x, y, "RELATES_TO", 0.6)
        sync(a, b)
        sync(a, c)
        a.delete(x)  # a deletes it, with its edge
        sync(a, c)  # c deletes it too
        b.update(x, content="Project Kestrel, now with a second team")  # b edits it, not having seen the delete
        b.associate(z, x, "RELATES_TO", 0.3)
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [x]
        sync(a, c)
        sync(b, c)
        want = {(x, "RELATES_TO", y), (z, "RELATES_TO", x)}
        for store in (a, b, c):
            assert store.get(x)["content"] == "Project Kestrel, now with a second team"
            assert edges(store) == want


def test_old_stores_get_stamps_derived_from_what_they_hold(tmp_path):
    """A schema-14 file (no stamps) upgraded in place: stamps derived from what it holds, for its
    memories, its tombstone and its edge (carried into the edge's row by schema 19)."""
    path = str(tmp_path / "v14.db")
    conn = connect(path)
    assert migrate(conn, Statements(), target=14) == 14
    ids = {name: str(uuid.uuid4()) for name in ("plain", "future", "gone")}
    times = {"plain": "2026-03-01T10:00:00+00:00", "future": FAR, "gone": "2026-03-02T10:00:00+00:00"}
    with transaction(conn):
        for name, memory_id in ids.items():
            conn.execute("INSERT INTO memories (id, content, summary, type, confidence, importance, tags, "
                         "timestamp, updated_at, last_accessed, metadata) VALUES (?, ?, ?, 'Context', 0.5, 0.5, "
                         "'[]', ?, ?, ?, '{}')", (memory_id, name, name, times[name], times[name], times[name]))
        conn.execute("INSERT INTO edges (src, dst, type, strength, updated_at, properties) SELECT a.pk, b.pk, "
                     "'RELATES_TO', 0.5, '2026-03-03T10:00:00+00:00', '{}' FROM memories a, memories b "
                     "WHERE a.id = ? AND b.id = ?", (ids["plain"], ids["future"]))
        conn.execute("DELETE FROM memories WHERE id = ?", (ids["gone"],))
    conn.close()
    with MemoryStore(path, embedder="hash") as a:
        zero = "0" * 32
        march = wall_ms(datetime(2026, 3, 1, 10, tzinfo=timezone.utc))
        assert stamp_of(a, ids["plain"]) == f"{march:015d}-{0:010d}-{zero}"
        assert stamp_key(stamp_of(a, ids["future"]), None) == (0, 0, zero)  # a 9999 time orders nothing
        deleted_hlc = a.conn.execute("SELECT deleted_hlc FROM sync_tombstones WHERE id = ?",
                                     (ids["gone"],)).fetchone()[0]
        assert deleted_hlc == f"{march + 86_400_000:015d}-{0:010d}-{zero}"
        assert edge_log(a) == {(ids["plain"], "RELATES_TO", ids["future"]):
                               (None, f"{march + 2 * 86_400_000:015d}-{0:010d}-{zero}")}
        later = a.store("Written after the upgrade")
        assert stamp_key(stamp_of(a, later), None) > stamp_key(stamp_of(a, ids["plain"]), None)


@pytest.mark.parametrize("bad", ["9" * 15, "1-2-3", "000000000000001-0000000000-" + "g" * 32])
def test_a_malformed_stamp_from_a_server_is_refused_naming_the_field(bad):
    from localmem.errors import ValidationError
    from localmem.replication.sync_wire import memory_from_json
    with pytest.raises(ValidationError, match=r"states\[0\]\.hlc"):
        memory_from_json({"id": "6f1c2d8e-4a5b-4c3d-9e8f-0a1b2c3d4e5f", "record": None, "hlc": bad}, "states[0]")


def test_a_peer_files_junk_stamps_are_not_taken(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = b.store("A note with a hostile stamp")
        b.conn.execute("UPDATE memory_changes SET hlc = ?", ("9" * 1_000_000,))
        summary = sync(a, b)
        assert summary.copied_to_local == 1 and summary.refused == []
        assert STAMP.fullmatch(stamp_of(a, memory)) and stamp_of(a, memory).endswith(store_id(a))
        assert (tmp_path / "a.db").stat().st_size < 1_000_000


def test_two_deletions_meeting_keep_the_one_that_deleted_the_later_version(tmp_path):
    """The stateful test's resurrection (seed 832553633), shrunk: A deletes the latest version,
    B, which never saw it, deletes an older one a moment later. When the two deletions met, the
    later-stamped one (B's) replaced A's, forgetting that A had deleted the latest version, and
    the next sync with C, which still held that version, brought it back. What both deletions
    deleted is everything up to the later of the two deleted versions."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, \
            skewed(tmp_path / "b.db", timedelta(hours=1)) as b, \
            MemoryStore(tmp_path / "c.db", embedder="hash") as c:  # B's clock ahead: its delete is the later
        memory = c.store("The boiler is serviced in March")
        sync(c, b)
        c.update(memory, content="The boiler is serviced in April")
        sync(c, a)  # A sees the latest version; B holds the first
        a.delete(memory)  # A deletes the version it holds, the latest
        b.delete(memory)  # B, later by the clocks, deletes the first, not having seen the latest
        sync(b, a)  # two deletions meet
        sync(c, a)  # C still holds the version A deleted
        for _ in range(2):
            sync(a, b), sync(b, c), sync(a, c)
        for store in (a, b, c):
            held = store.conn.execute("SELECT content FROM memories WHERE id = ?", (memory,)).fetchall()
            assert held == [], "a version its deleter had seen came back"
            assert tombstone(store, memory) == tombstone(a, memory)
