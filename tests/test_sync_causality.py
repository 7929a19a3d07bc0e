"""An edit against a delete is decided by causality, not the clock (issue 42, item 1).

A deletion carries what its store had seen of the memory (``replication/seen.py``): an edit the
deleter had seen loses to it (into the trash); an edit made without seeing it survives, and the
summary says so, even when the edit's stamp is earlier than the deleted version's.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from localmem import MemoryStore
from localmem.errors import ValidationError
from localmem.maintenance.export import dump_line, iter_export
from localmem.maintenance.importer import import_jsonl
from localmem.replication.push_client import PushClient
from localmem.replication.seen import MAX_REPLICAS, Seen, join
from localmem.replication.sync import sync_stores
from localmem.replication.sync_remote import RemoteSide
from localmem.replication.sync_side import StoreSide
from localmem.replication.sync_wire import memory_from_json
from localmem.trash import restore
from test_sync_http import TOKEN, remote_store, server  # noqa: F401 (a fixture)


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def skewed(path, offset: timedelta) -> MemoryStore:
    return MemoryStore(path, embedder="hash", clock=lambda: datetime.now(timezone.utc) + offset)


def content(store: MemoryStore, memory_id: str) -> str | None:
    row = store.conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return row[0] if row else None


def in_trash(store: MemoryStore, memory_id: str) -> bool:
    return store.conn.execute("SELECT 1 FROM trash WHERE id = ?", (memory_id,)).fetchone() is not None


@pytest.mark.parametrize("behind", [timedelta(0), timedelta(hours=1)])
def test_an_edit_made_without_seeing_a_delete_survives_it_though_stamped_before(tmp_path, behind):
    """A edits then deletes M; B, not having seen either, edited M earlier by the clock (or with a
    clock an hour behind). B's edit was made without seeing the delete: it survives on both."""
    with skewed(tmp_path / "a.db", timedelta(0)) as a, skewed(tmp_path / "b.db", -behind) as b:
        memory = a.store("the boiler is serviced in March")
        sync(a, b)
        b.update(memory, content="the boiler is serviced in May")  # stamped first
        time.sleep(0.005)
        a.update(memory, content="the boiler is serviced in April")  # the version A deletes
        a.delete(memory)
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [memory]
        assert content(a, memory) == content(b, memory) == "the boiler is serviced in May"
        assert sync(a, b).edits_kept_over_deletes == []  # settled: nothing moves again


def test_the_same_through_a_server_peer(tmp_path, server):  # noqa: F811
    url, _ = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as local, PushClient(url, token=TOKEN) as client:
        here = StoreSide(local, "laptop")
        memory = local.store("the spare key is under the pot")
        sync_stores(here, RemoteSide(client, here.store_id))
        with remote_store(url) as http:  # the server's edit, made first
            assert http.patch(f"/memory/{memory}", json={"content": "the key is with Ana"}).status_code == 200
        time.sleep(0.005)
        local.update(memory, content="the spare key is in the shed")
        local.delete(memory)
        summary = sync_stores(here, RemoteSide(client, here.store_id), allow_deletes=10)
        assert summary.edits_kept_over_deletes == [memory]
        assert content(local, memory) == "the key is with Ana"
        with remote_store(url) as http:
            assert http.get(f"/memory/{memory}").json()["memory"]["content"] == "the key is with Ana"


@pytest.fixture
def three(tmp_path):
    """Three stores a, b, c sharing one memory (its id), all synced."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b, \
            MemoryStore(tmp_path / "c.db", embedder="hash") as c:
        memory = a.store("the first version")
        sync(a, b), sync(a, c)
        yield a, b, c, memory


def test_a_delete_that_had_seen_the_edit_through_a_third_store_wins(three):
    """B edits M, C takes it from B and edits it again, A takes C's version and deletes it: A had
    seen B's edit (through C), though A never held it. B's edit must not bring M back."""
    a, b, c, memory = three
    b.update(memory, content="the plumber is Bea")
    sync(b, c)
    c.update(memory, content="the plumber is Cai")
    sync(c, a)
    a.delete(memory)
    summary = sync(a, b)
    assert summary.edits_kept_over_deletes == [] and summary.deleted_on_peer == 1
    sync(a, c), sync(b, c)
    assert all(content(s, memory) is None for s in (a, b, c))
    assert in_trash(b, memory)  # B's version, deleted by someone who had seen it: restorable


def test_a_delete_that_had_seen_the_edit_as_a_conflict_loser_wins(three):
    """A and B edit M concurrently; their sync keeps one version and the other as a conflict
    copy. A then deletes M. C, which took B's edit before that sync, must not bring M back:
    A had seen B's edit (it lost the conflict there, and is kept as a copy)."""
    a, b, c, memory = three
    b.update(memory, content="the meeting is on Tuesday")
    sync(b, c)
    time.sleep(0.005)
    a.update(memory, content="the meeting is on Wednesday")
    merged = sync(a, b)
    assert len(merged.conflicts) == 1
    a.delete(memory)
    summary = sync(a, c)
    assert summary.edits_kept_over_deletes == []
    sync(b, c), sync(a, b)
    assert all(content(s, memory) is None for s in (a, b, c))
    copy = merged.conflicts[0]["kept_as"]
    assert content(a, copy) == content(c, copy) == "the meeting is on Tuesday"


def test_a_delete_of_the_agreed_version_wins_whatever_the_clocks(tmp_path):
    """The old rule still holds: a delete of the version both stores agreed on wins, on every
    store, whatever the clocks read."""
    with skewed(tmp_path / "a.db", -timedelta(hours=2)) as a, skewed(tmp_path / "b.db", timedelta(hours=2)) as b:
        memory = a.store("the car is due for a service")
        sync(a, b)
        a.delete(memory)
        summary = sync(a, b)
        assert summary.deleted_on_peer == 1 and content(b, memory) is None


def test_what_a_store_has_seen_is_bounded_and_folds_into_a_floor():
    stamps = [f"{wall:015d}-{0:010d}-{replica:032x}" for wall, replica in zip(range(100, 120), range(1, 21))]
    seen = join([], stamps)
    assert len(seen.stamps) == MAX_REPLICAS and seen.floor == stamps[3]
    assert all(seen.covers(s) for s in stamps)  # the folded ones, under the floor
    later_from_a_folded_replica = f"{200:015d}-{0:010d}-{1:032x}"
    assert not seen.covers(later_from_a_folded_replica)
    # The join is the same in any order and grouping.
    halves = join([join([], stamps[:7]), join([], stamps[7:])])
    assert halves == seen == join([join([], stamps[12:]), join([], stamps[:12])])
    assert join([Seen()], []) == Seen()


def test_the_triggers_keep_the_same_bound(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a:
        memory = a.store("a note edited by many stores")
        for n in range(1, 25):  # as if 24 stores had each made a version of it in turn
            a.conn.execute("UPDATE memory_changes SET hlc = ? WHERE pk = (SELECT pk FROM memories WHERE id = ?)",
                           (f"{1000 + n:015d}-{0:010d}-{n:032x}", memory))
            a.update(memory, content=f"version {n}")
        rows = dict(a.conn.execute("SELECT replica, hlc FROM sync_seen WHERE id = ?", (memory,)))
        assert len(rows) == MAX_REPLICAS + 1 and rows["floor"] == f"{1008:015d}-{0:010d}-{8:032x}"
        # A sync's join, with entries for 20 more replicas, keeps the bound as well.
        more = [f"{2000 + n:015d}-{0:010d}-{100 + n:032x}" for n in range(20)]
        StoreSide(a, "a").record_seen({memory: Seen(tuple(more))})
        rows = dict(a.conn.execute("SELECT replica, hlc FROM sync_seen WHERE id = ?", (memory,)))
        assert len(rows) == MAX_REPLICAS + 1 and rows["floor"] == more[3]


@pytest.mark.parametrize("seen", [
    "all of it", [["x"] * 2], [["floor", "not-a-stamp"]],
    [[f"{1:032x}", f"{5:015d}-{0:010d}-{2:032x}"]],  # a row naming another replica than its stamp's
    [["floor", f"{5:015d}-{0:010d}-{2:032x}"]] * (MAX_REPLICAS + 2),
])
def test_a_hostile_seen_summary_from_a_server_is_refused_naming_the_field(seen):
    state = {"id": "00000000-0000-4000-8000-000000000001", "record": None,
             "deleted_at": "2026-01-01T00:00:00+00:00", "seen": seen}
    with pytest.raises(ValidationError, match=r"states\[0\]\.seen"):
        memory_from_json(state, "states[0]")


def test_the_seen_route_refuses_hostile_bodies(server):  # noqa: F811
    url, _ = server
    with remote_store(url) as http:
        for body in ({"seen": [["../x", []]]}, {"seen": [[str(i), []] for i in range(501)]},
                     {"seen": [["00000000-0000-4000-8000-000000000001", [["floor", "x"]]]]}):
            assert http.post("/sync/seen", json=body).status_code == 400, body
        assert httpx.post(f"{url}/sync/seen", json={"seen": []}).status_code == 401


def test_a_server_peers_clock_bounds_the_skew_like_a_file_peers(tmp_path):
    """This machine's clock is 30 days ahead; the server's is right. Stamps more than 24 h ahead
    of the earlier of the two clocks order nothing, as with a file peer: this store's far-future
    edit does not win over the server's edit made after it; it is kept as a conflict copy."""
    from localmem.http.app import create_app
    from localmem.http.server import uvicorn_config
    from serving import in_thread

    with MemoryStore(tmp_path / "server.db", embedder="hash") as served, \
            skewed(tmp_path / "a.db", timedelta(days=30)) as local, \
            in_thread(lambda port: uvicorn_config(create_app(served, token=TOKEN), port=port, log_level="warning",
                                                  log_config=None)) as url, \
            PushClient(url, token=TOKEN) as client:
        here = StoreSide(local, "laptop")
        memory = local.store("standup at 9:30")
        sync_stores(here, RemoteSide(client, here.store_id))
        local.update(memory, content="standup at 10:00")  # stamped 30 days ahead
        time.sleep(0.005)
        served.update(memory, content="standup at 9:45")  # made after it, by a right clock
        summary = sync_stores(here, RemoteSide(client, here.store_id))
        assert len(summary.conflicts) == 1
        assert content(local, memory) == content(served, memory) == "standup at 9:45"
        assert content(served, summary.conflicts[0]["kept_as"]) == "standup at 10:00"


@pytest.mark.parametrize("wall", [-1, "soon", 2 ** 63, True])
def test_a_server_answering_a_malformed_clock_is_refused(wall):
    from localmem.errors import LocalMemError
    from localmem.replication.sync_remote import server_wall_ms

    with pytest.raises(LocalMemError, match="wall_ms"):
        server_wall_ms({"wall_ms": wall}, "http://server")


def test_an_edit_kept_over_a_delete_does_not_make_three_stores_cycle(tmp_path):
    """Found by the stateful test (seed 1874986869). B's edit, made on a clock two hours behind,
    survives A's delete; C still holds A's earlier version, which A had agreed with C and which
    is later by the clock. A version changed since the pair's base but stamped before the other
    side's is not its successor: it is a conflict (the later stamp wins, the other is kept), not
    a copy, else each pair copies the other's version round and round."""
    with skewed(tmp_path / "a.db", timedelta(0)) as a, skewed(tmp_path / "b.db", -timedelta(hours=2)) as b, \
            skewed(tmp_path / "c.db", timedelta(0)) as c:
        memory = a.store("the first version")
        sync(a, b), sync(a, c)
        a.update(memory, content="A's first edit")
        sync(a, c)  # A and C agree on A's first edit
        b.update(memory, content="B's edit")  # stamped two hours before A's edits
        a.update(memory, content="A's second edit")
        a.delete(memory)
        assert sync(a, b).edits_kept_over_deletes == [memory]  # B's edit survives A's delete
        for _ in range(3):
            for x, y in ((b, c), (a, c), (a, b)):
                sync(x, y)
        assert content(a, memory) == content(b, memory) == content(c, memory)
        held = [row[0] for row in a.conn.execute("SELECT content FROM memories")]
        assert "B's edit" in held and "A's first edit" in held  # one current, the other a conflict copy


def test_a_conflict_copy_copied_to_a_store_whose_delete_removed_its_link_is_linked_again(tmp_path):
    """B and C keep a conflict copy of M, linked to M. B deletes M (its link goes with it) while
    A and C edit M unseen, so M comes back to B with A's edges (A never held the copy). The copy
    then reaches A from B: it is linked on both, and the removal B's delete logged does not undo
    that, so every store ends with the copy linked to M (found by the stateful model)."""
    a, b, c = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "abc")
    try:
        memory = a.store("M as first written")
        sync(a, b), sync(a, c)
        b.update(memory, content="M edited on b")
        time.sleep(0.002)
        c.update(memory, content="M edited on c")
        sync(b, c)
        copies = [row[0] for row in b.conn.execute(
            "SELECT id FROM memories WHERE metadata ->> '$.sync_conflict.memory_id' = ?", (memory,))]
        assert len(copies) == 1
        a.update(memory, content="M edited on a, unseen by b")
        c.update(memory, content="M edited on c again, unseen by b")
        b.delete(memory)
        for _ in range(2):
            sync(a, b), sync(b, c), sync(a, c)
        for store in (a, b, c):
            assert store.conn.execute(
                "SELECT count(*) FROM edges e JOIN memories k ON k.pk = e.src JOIN memories m ON m.pk = e.dst "
                "WHERE k.id = ? AND m.id = ? AND e.type = 'INVALIDATED_BY'", (copies[0], memory)).fetchone()[0] == 1
    finally:
        for store in (a, b, c):
            store.close()


def test_a_memory_the_deleting_store_imports_again_from_an_older_export_comes_back_everywhere(tmp_path):
    """An import writes the exported ``updated_at``, so a memory A deleted and then imported again
    from an export taken before holds the very version A deleted. A sync decided it "seen by the
    deleter" by that ``updated_at`` and deleted it again, on A too (into the trash): the import was
    undone by the next sync. A version the deleting store made after its delete (its stamp says
    so) cannot have been seen by that delete: the memory comes back on both stores."""
    a, b = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "ab")
    try:
        kept = a.store("the boiler is serviced every October")
        sync(a, b)
        older = [dump_line(value) for value in iter_export(a)]
        a.delete(kept)
        sync(a, b)
        assert in_trash(b, kept)
        import_jsonl(a, older, skip_existing=True)
        assert content(a, kept) == "the boiler is serviced every October"
        sync(a, b)
        for store in (a, b):
            assert content(store, kept) == "the boiler is serviced every October"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("restored_first", [False, True])
@pytest.mark.parametrize("ahead", [timedelta(0), timedelta(hours=3)])
def test_an_import_on_a_store_that_took_the_delete_in_brings_the_memory_back_everywhere(tmp_path, restored_first,
                                                                                       ahead):
    """B takes A's delete in (the memory goes to B's trash), then imports an export taken before
    it (or restores it from the trash and imports the export with ``update``): the version written
    is the one A deleted, ``updated_at`` and all, but B made it after taking the delete in. It was
    counted as seen by the delete, so the next sync put it in the trash again (the gap syncops11
    wrote down). B's summary now holds the deletion's own stamp: a version B stamped after it is
    new, and comes back on both stores, whichever store's clock is ahead."""
    a, b = skewed(tmp_path / "a.db", ahead), MemoryStore(tmp_path / "b.db", embedder="hash")
    try:
        kept = a.store("the spare key is under the blue pot")
        sync(a, b)
        older = [dump_line(value) for value in iter_export(b)]
        a.delete(kept)
        sync(a, b)
        assert in_trash(b, kept) and content(b, kept) is None
        if restored_first:
            restore(b, kept)
        import_jsonl(b, older, skip_existing=not restored_first, update=restored_first)
        assert content(b, kept) == "the spare key is under the blue pot"
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [kept], summary
        for store in (a, b):
            assert content(store, kept) == "the spare key is under the blue pot"
        sync(a, b)
        assert content(a, kept) == content(b, kept) == "the spare key is under the blue pot"
    finally:
        a.close()
        b.close()


def test_an_import_on_a_store_that_never_saw_the_delete_is_still_the_version_deleted(tmp_path):
    """The other side of the rule above: a store that had not taken the delete in writes, by an
    import, the very version the deleter deleted: that version counts as seen by the delete, and
    the next sync deletes it (into the trash)."""
    a, b, c = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "abc")
    try:
        gone = a.store("the old router password is hunter2")
        sync(a, b)
        older = [dump_line(value) for value in iter_export(b)]
        a.delete(gone)
        import_jsonl(c, older, skip_existing=True)  # c never held it, nor saw the delete
        sync_stores(StoreSide(a, "a"), StoreSide(c, "c"), allow_deletes=100)
        assert content(a, gone) is None and content(c, gone) is None and in_trash(c, gone)
    finally:
        for store in (a, b, c):
            store.close()


def test_a_memory_imported_and_deleted_unedited_stays_deleted_on_the_exporting_store(tmp_path):
    """An export carries no stamps, so B's import is a version of B's own; unedited, it has A's
    ``updated_at`` and is the version A holds: B's delete of it covers A's (docs/sync.md)."""
    a, b = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "ab")
    try:
        gone = a.store("the wifi name is marlowe")
        import_jsonl(b, [dump_line(value) for value in iter_export(a)], skip_existing=True)
        b.delete(gone)
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [], summary
        assert content(a, gone) is None and content(b, gone) is None and in_trash(a, gone)
    finally:
        a.close()
        b.close()
