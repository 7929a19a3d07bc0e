"""An edge's change number and stamp in its own row (schema 19, issue 44 item 4).

The edge log's rows move into the edges they describe and into ``sync_edge_tombstones``; a
store upgraded with changes still unsent to a peer sends each of them, once, at its next sync;
every writer of edges (the upsert, a bare INSERT, an UPDATE, a removal) leaves a change a sync
reads.
"""

from __future__ import annotations

import uuid

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide, pages
from localmem.storage.database import connect, transaction
from localmem.storage.migrations import LATEST_VERSION, migrate
from localmem.storage.statements import Statements

PEER = "ab" * 16


def insert_memory(conn, memory_id: str, text: str) -> None:
    conn.execute("INSERT INTO memories (id, content, summary, type, confidence, importance, tags, timestamp, "
                 "updated_at, last_accessed, metadata) VALUES (?, ?, ?, 'Context', 0.5, 0.5, '[]', "
                 "'2026-03-01T10:00:00+00:00', '2026-03-01T10:00:00+00:00', '2026-03-01T10:00:00+00:00', '{}')",
                 (memory_id, text, text))


def insert_edge(conn, first: str, second: str, strength: float = 0.5) -> None:
    conn.execute("INSERT INTO edges (src, dst, type, strength, updated_at, properties) SELECT a.pk, b.pk, "
                 "'RELATES_TO', ?, '2026-03-01T11:00:00+00:00', '{}' FROM memories a, memories b "
                 "WHERE a.id = ? AND b.id = ?", (strength, first, second))


def old_log(conn) -> dict[tuple[str, str, str], tuple[str | None, int, str]]:
    return {(s, t, d): (deleted, seq, hlc) for s, t, d, deleted, seq, hlc in conn.execute(
        "SELECT src_id, type, dst_id, deleted_at, seq, hlc FROM sync_edge_log")}


def edge_changes(store: MemoryStore, since: int, peer: str = PEER) -> list:
    side = StoreSide(store, "a")
    return [edge for page in pages(side, "edges", since, side.clock(), peer) for edge in page]


def make_schema_18_store(path: str) -> tuple[list[str], int, dict]:
    """Five memories and edges among them, a peer sent everything up to a mark, then edge changes
    after it (an update, a removal, a memory deleted with its edge, a new edge): what the edge log
    of schema 18 held, and the mark."""
    conn = connect(path)
    assert migrate(conn, Statements(), target=18) == 18
    m = [str(uuid.uuid4()) for _ in range(5)]
    with transaction(conn):
        for i, memory_id in enumerate(m):
            insert_memory(conn, memory_id, f"note {i}")
        insert_edge(conn, m[0], m[1])
        insert_edge(conn, m[1], m[2])
        insert_edge(conn, m[2], m[3])
        insert_edge(conn, m[3], m[0])
        insert_edge(conn, m[4], m[0])  # unchanged after the mark: stays sent
        mark = conn.execute("SELECT seq FROM sync_clock").fetchone()[0]
        conn.execute("INSERT INTO sync_peers (peer, sent_seq, last_sync) VALUES (?, ?, "
                     "'2026-03-01T12:00:00+00:00')", (PEER, mark))
    with transaction(conn):
        conn.execute("UPDATE edges SET strength = 0.9 WHERE src = (SELECT pk FROM memories WHERE id = ?)", (m[0],))
        conn.execute("DELETE FROM edges WHERE src = (SELECT pk FROM memories WHERE id = ?)", (m[1],))
        insert_edge(conn, m[0], m[2])
        conn.execute("DELETE FROM memories WHERE id = ?", (m[3],))  # its two edges go with it
    log = old_log(conn)
    conn.close()
    return m, mark, log


def test_a_schema_18_store_sends_each_unsent_edge_change_once_after_the_upgrade(tmp_path):
    path = str(tmp_path / "v18.db")
    m, mark, log = make_schema_18_store(path)
    key = lambda a, b: (m[a], "RELATES_TO", m[b])  # noqa: E731
    pending = {key(0, 1), key(1, 2), key(0, 2), key(2, 3), key(3, 0)}
    assert {k for k, (_, seq, _) in log.items() if seq > mark} == pending
    with MemoryStore(path, embedder="hash") as store:
        assert store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
            LATEST_VERSION)
        assert store.conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'sync_edge_log'").fetchone()[0] == 0
        changes = edge_changes(store, StoreSide(store, "a").sent_to(PEER))
        assert sorted(edge.key for edge in changes) == sorted(pending)  # each once, none of the sent ones
        for edge in changes:  # with the stamps (and removal times) the log held
            deleted_at, _, hlc = log[edge.key]
            assert edge.hlc == hlc and edge.deleted_at == deleted_at
            assert edge.exists == (deleted_at is None)
        assert {e.key: e.strength for e in changes if e.exists} == {key(0, 1): 0.9, key(0, 2): 0.5}
        # Everything the log held is still there to a first sync, in change order, numbers unchanged.
        every = edge_changes(store, 0, peer="cd" * 16)
        assert [(e.key, e.hlc) for e in every] == [(k, hlc) for k, (_, seq, hlc) in
                                                  sorted(log.items(), key=lambda kv: kv[1][1])]
        # A write after the upgrade is numbered after everything the log held.
        store.associate(m[2], m[0])
        after = edge_changes(store, max(seq for _, seq, _ in log.values()))
        assert [e.key for e in after] == [key(2, 0)]


def test_an_upgraded_store_syncs_its_edges_once(tmp_path):
    path = str(tmp_path / "v18.db")
    m, _, _ = make_schema_18_store(path)
    with MemoryStore(path, embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        first = sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)
        assert first.edges_to_peer >= 3
        edges = "SELECT a.id, e.type, b.id, e.strength, e.hlc FROM edges e JOIN memories a ON a.pk = e.src " \
                "JOIN memories b ON b.pk = e.dst ORDER BY 1, 3"
        assert list(a.conn.execute(edges)) == list(b.conn.execute(edges))
        assert len(list(b.conn.execute(edges))) == 3
        again = sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)
        assert (again.edges_to_peer, again.edges_to_local) == (0, 0)


def test_every_edge_writer_leaves_a_change_with_a_stamp(tmp_path):
    """The upsert stamps in its own statement; a bare INSERT or UPDATE is stamped by the triggers;
    a removal leaves a tombstone; an edge made again hides its stale tombstone."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as store:
        x, y, z = store.store("one"), store.store("two"), store.store("three")
        seen = lambda: {e.key: e for e in edge_changes(store, 0)}  # noqa: E731
        store.associate(x, y)
        with transaction(store.conn):
            store.conn.execute("INSERT INTO edges (src, dst, type, strength, updated_at, properties) "
                               "SELECT a.pk, b.pk, 'LEADS_TO', 0.4, '2026-01-01T00:00:00+00:00', '{}' "
                               "FROM memories a, memories b WHERE a.id = ? AND b.id = ?", (y, z))
        before = seen()
        assert set(before) == {(x, "RELATES_TO", y), (y, "LEADS_TO", z)}
        assert all(e.hlc and e.exists for e in before.values())
        with transaction(store.conn):
            store.conn.execute("UPDATE edges SET strength = 0.7 WHERE type = 'LEADS_TO'")
        updated = seen()[(y, "LEADS_TO", z)]
        assert updated.strength == 0.7 and updated.hlc > before[(y, "LEADS_TO", z)].hlc
        numbers = [row[0] for row in store.conn.execute("SELECT seq FROM edges")]
        assert len(set(numbers)) == len(numbers)
        store.dissociate(x, y)
        removed = seen()[(x, "RELATES_TO", y)]
        assert not removed.exists and removed.deleted_at and removed.hlc > before[(x, "RELATES_TO", y)].hlc
        store.associate(x, y, strength=0.3)
        again = seen()
        assert again[(x, "RELATES_TO", y)].exists and again[(x, "RELATES_TO", y)].strength == 0.3
        assert len(edge_changes(store, 0)) == 2  # the stale tombstone is not a change
        store.delete(z)  # a memory's deletion logs its edges' removal
        assert not seen()[(y, "LEADS_TO", z)].exists


def test_migration_19_runs_again_on_a_file_set_back_a_version(tmp_path):
    path = str(tmp_path / "s.db")
    with MemoryStore(path, embedder="hash") as store:
        x, y = store.store("one"), store.store("two")
        store.associate(x, y)
        store.conn.execute("UPDATE meta SET value = '18' WHERE key = 'schema_version'")
        before = list(store.conn.execute("SELECT src, type, dst, seq, hlc FROM edges"))
    with MemoryStore(path, embedder="hash") as store:
        assert list(store.conn.execute("SELECT src, type, dst, seq, hlc FROM edges")) == before
        store.associate(y, x)
        assert len(edge_changes(store, 0)) == 2


def test_a_file_set_back_below_schema_15_keeps_its_edge_stamps(tmp_path):
    """Steps 15 to 19 run again (schema 15's step wrote the edge log, which 19 dropped): the log is
    made again for them, and the edges keep their numbers and stamps; new edges are logged."""
    path = str(tmp_path / "s.db")
    with MemoryStore(path, embedder="hash") as store:
        x, y = store.store("one"), store.store("two")
        store.associate(x, y)
        store.conn.execute("UPDATE meta SET value = '14' WHERE key = 'schema_version'")
        before = list(store.conn.execute("SELECT src, type, dst, seq, hlc FROM edges"))
    with MemoryStore(path, embedder="hash") as store:
        assert list(store.conn.execute("SELECT src, type, dst, seq, hlc FROM edges")) == before
        store.associate(y, x)
        assert [e.key for e in edge_changes(store, 0)] == [(x, "RELATES_TO", y), (y, "RELATES_TO", x)]
