"""A memory brought back by ``trash restore``, ``import`` or a sync that keeps an edit over its
delete gets its conflict copies' links back.

A conflict copy (the losing version of a memory changed on two stores) is hidden from recall
by the sync's link to the memory that won. A delete of the winner removes that link (and logs
the removal); a restore or an import that puts the winner back links every conflict copy held
here that names it again, stamped now, so recall shows the winner, not the copy, and the next
sync carries the link to the peer instead of applying the earlier removal again. A sync that
brings a memory back over this store's delete links again the copies whose link that delete removed
(not those a peer's removal took away: docs/sync.md).
"""

from __future__ import annotations

import json
import time

from localmem import MemoryStore
from localmem.maintenance.export import iter_export
from localmem.maintenance.importer import import_jsonl
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from localmem.trash import restore
from test_sync_hostile_remote import cli
from test_sync_stateful import RacingSide

LINK = ("SELECT count(*) FROM edges e JOIN memories c ON c.pk = e.src JOIN memories w ON w.pk = e.dst "
        "WHERE c.id = ? AND w.id = ? AND e.type = 'INVALIDATED_BY'")


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def linked(store: MemoryStore, copy: str, winner: str) -> bool:
    return store.conn.execute(LINK, (copy, winner)).fetchone()[0] == 1


def conflict(a: MemoryStore, b: MemoryStore, memory: str) -> str:
    """Change ``memory`` on both stores and sync: the id of the conflict copy (linked on both)."""
    a.update(memory, content="The team offsite is in Lisbon in May")
    time.sleep(0.002)
    b.update(memory, content="The team offsite is in Porto in May")
    sync(a, b)
    [copy] = [row[0] for row in a.conn.execute(
        "SELECT id FROM memories WHERE metadata ->> '$.sync_conflict.memory_id' = ?", (memory,))]
    assert linked(a, copy, memory) and linked(b, copy, memory)
    return copy


def assert_settled(a: MemoryStore, b: MemoryStore, copy: str, winner: str) -> None:
    """The copy is linked to the winner on both stores, recall shows the winner and not the copy,
    and a further sync removes nothing."""
    for _ in range(2):
        summary = sync(a, b)
    assert summary.deleted_on_local == summary.deleted_on_peer == 0
    for store in (a, b):
        assert store.get(winner) is not None and store.get(copy) is not None
        assert linked(store, copy, winner)
        shown = [r["memory"]["id"] for r in store.recall("team offsite", limit=10)["results"]]
        assert winner in shown and copy not in shown


def test_a_restore_of_a_winner_a_peer_deleted_links_its_conflict_copy_again(tmp_path):
    local, peer = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(local, embedder="hash") as a, MemoryStore(peer, embedder="hash") as b:
        memory = a.store("The team offsite is in May")
        sync(a, b)
        copy = conflict(a, b, memory)
        time.sleep(0.002)
        b.delete(memory)  # the peer's delete removes the link there and logs the removal
        sync(a, b)
        assert a.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory,)).fetchone() is None
        # The order the stateful model found (its link removal reached this store before the delete,
        # so the trash entry holds no link to put back), made here directly: the entry without edges.
        a.conn.execute("UPDATE trash SET edges = '[]' WHERE id = ?", (memory,))
    run = cli(local, "trash", "restore", memory, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["restored"] == [memory], run.stderr
    with MemoryStore(local, embedder="hash") as a, MemoryStore(peer, embedder="hash") as b:
        assert linked(a, copy, memory)
        shown = [r["memory"]["id"] for r in a.recall("team offsite", limit=10)["results"]]
        assert memory in shown and copy not in shown
        assert_settled(a, b, copy, memory)


def test_an_import_that_brings_a_deleted_winner_back_links_its_conflict_copy_again(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = a.store("The team offsite is in May")
        sync(a, b)
        export = [json.dumps(line) for line in iter_export(b)]  # taken before the conflict and the delete
        copy = conflict(a, b, memory)
        time.sleep(0.002)
        b.delete(memory)  # the link goes with it
        assert not linked(b, copy, memory)
        result = import_jsonl(b, export, skip_existing=True)
        assert result.memories == 1
        assert linked(b, copy, memory)
        shown = [r["memory"]["id"] for r in b.recall("team offsite", limit=10)["results"]]
        assert memory in shown and copy not in shown
        assert_settled(a, b, copy, memory)


def test_an_import_whose_file_holds_the_link_writes_it_once_and_is_not_refused(tmp_path):
    """The relink comes after the file's edges: a default import (an existing edge is an error) of
    the winner and its link still succeeds, and the link is the file's."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = a.store("The team offsite is in May")
        sync(a, b)
        copy = conflict(a, b, memory)
        lines = [line for line in iter_export(b) if line.get("kind") == "edge" or line.get("id") == memory]
        assert [line["kind"] for line in lines] == ["memory", "edge"]
        b.delete(memory)
        result = import_jsonl(b, [json.dumps(line) for line in lines])
        assert (result.memories, result.edges) == (1, 1) and linked(b, copy, memory)


class Stopped(Exception):
    """Raised from a sync's progress callback: the sync stops there, as a killed process would."""


def stop_after_first_page(what: str, n: int) -> None:
    raise Stopped(what)


def held(store: MemoryStore, memory_id: str) -> bool:
    return store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None


def three_with_a_copy_the_keeper_lacks(tmp_path):
    """Stores a, b, c all holding one memory; a and c then change it both and sync (the conflict
    copy, linked, on those two; b holds no copy): (a, b, c, memory, copy)."""
    a, b, c = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "abc")
    memory = a.store("The team offsite is in May")
    sync(a, b)
    sync(a, c)
    copy = conflict(a, c, memory)
    assert not held(b, copy)
    return a, b, c, memory, copy


def settle_three(a: MemoryStore, b: MemoryStore, c: MemoryStore) -> None:
    """Two rounds of syncs, the store that brought the memory back meeting the third one first."""
    for _ in range(2):
        for one, other in ((a, c), (c, b), (a, b)):
            sync(one, other)


def test_a_sync_killed_after_keeping_an_edit_over_a_delete_leaves_the_conflict_copy_linked(tmp_path):
    """The stateful model's seed 853882431 (100 steps), reduced: b edits a memory that a, not having
    seen that edit, deletes (its delete removes the link of a conflict copy b does not hold yet).
    A sync of b and a stopped right after its first page has brought the memory back on a, before
    a's changes (the copy, the removal) went to b. The copy's link has its own stamp, older than
    the removal: without a link written again on a, the removal reaches c (which held the link)
    and then b, and the copy ends unlinked on every store, shown by recall as a current memory."""
    a, b, c, memory, copy = three_with_a_copy_the_keeper_lacks(tmp_path)
    with a, b, c:
        b.update(memory, content="The team offsite is in Faro in May")
        time.sleep(0.002)
        a.delete(memory)
        assert not linked(a, copy, memory)
        try:
            sync_stores(StoreSide(b, "b"), StoreSide(a, "a"), allow_deletes=100, progress=stop_after_first_page)
        except Stopped:
            pass
        assert a.get(memory)["content"] == "The team offsite is in Faro in May" and not held(b, copy)
        settle_three(a, b, c)
        for store in (a, b, c):
            assert held(store, memory) and held(store, copy)
            assert linked(store, copy, memory)
            shown = [r["memory"]["id"] for r in store.recall("team offsite", limit=10)["results"]]
            assert memory in shown and copy not in shown


def test_a_link_a_peer_removed_stays_removed_when_a_sync_keeps_an_edit_over_a_delete(tmp_path):
    """Only the links this store's delete removed are written again: c, having seen the link,
    removes it, and a takes that removal in before its delete; the memory brought back on a (the
    sync stopped as above) leaves the copy unlinked there, and the removal holds on every store."""
    a, b, c, memory, copy = three_with_a_copy_the_keeper_lacks(tmp_path)
    with a, b, c:
        assert c.dissociate(copy, memory, "INVALIDATED_BY")["removed"] == 1
        sync(c, a)
        assert not linked(a, copy, memory)
        b.update(memory, content="The team offsite is in Faro in May")
        time.sleep(0.002)
        a.delete(memory)
        try:  # stopped as above: a's changes (the copy, which every store links anew) not yet on b
            sync_stores(StoreSide(b, "b"), StoreSide(a, "a"), allow_deletes=100, progress=stop_after_first_page)
        except Stopped:
            pass
        assert held(a, memory) and not linked(a, copy, memory)
        settle_three(a, b, c)
        for store in (a, b, c):
            assert held(store, memory) and held(store, copy)
            assert not linked(store, copy, memory)


class StopsBeforeItsEdges(StoreSide):
    """A store side whose process is killed right before the sync's first edge write there: after the
    memories it brought back over their delete are written, before their edges and links."""

    def put_edges(self, states, peer):
        raise Stopped("killed before the edges")

    def relink_conflict_copies(self, memory_ids):  # the links go first (sync.bring_edges_back)
        raise Stopped("killed before the links")


def test_a_sync_killed_before_the_edges_of_a_memory_kept_over_a_delete_leaves_the_conflict_copy_linked(tmp_path):
    """The stateful model's seed 4009408912 (100 steps), reduced: a, b and c hold a conflict copy linked to
    its winner; a deletes the winner (the delete removes the link, stamped by a), c edits it, b takes c's
    edit. A sync of b and a killed after bringing the winner back on a, before its edges: b owes a the
    winner's edges (noted in b). Before they are settled, c meets a and takes a's removal, which is
    stamped after the link's own stamp; the settled link then lost to it on every store. Now the link
    a's delete removed is written again on a stamped now, where the keeper's earlier link would go."""
    a, b, c = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "abc")
    with a, b, c:
        memory = a.store("The team offsite is in May")
        sync(a, b)
        copy = conflict(a, b, memory)
        sync(a, c)
        assert all(linked(store, copy, memory) for store in (a, b, c))
        a.delete(memory)
        time.sleep(0.002)
        c.update(memory, content="The team offsite is in Faro in May")
        sync(c, b)
        try:
            sync_stores(StoreSide(b, "b"), StopsBeforeItsEdges(a, "a"), allow_deletes=100)
        except Stopped:
            pass
        assert held(a, memory) and not linked(a, copy, memory)
        sync(c, a)  # a's removal reaches c before b settles what it owes a
        for _ in range(2):
            for one, other in ((b, a), (c, b), (a, c)):
                sync(one, other)
        for store in (a, b, c):
            assert held(store, memory) and held(store, copy)
            assert linked(store, copy, memory), store.path
            shown = [r["memory"]["id"] for r in store.recall("team offsite", limit=10)["results"]]
            assert memory in shown and copy not in shown


def test_a_conflict_copy_trashed_after_its_links_removal_is_linked_when_restored_or_imported(tmp_path):
    """The stateful model's seed 3937486121 (200 × 100, branch importsync15), reduced; main's code
    fails it. A writer deletes a conflict copy on b during a sync whose edge pass meets the copy's
    link on a: the removal b logged wins there, the copy's own delete waits for the next sync, which
    trashes the copy on a without its link. Restored on a from that trash, and taken back by b from
    a's export, the copy was held on both, its winner too, linked on neither (recall shows it as
    current). A copy a restore or an import puts back is now linked again, as its winner's copies are."""
    a, b = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "ab")
    with a, b:
        memory = a.store("The team offsite is in May")
        sync(a, b)
        copy = conflict(a, b, memory)
        a.associate(copy, memory, "INVALIDATED_BY", 0.8)  # the link written again on a: in a's next edge page
        a.store("a note for the sync to write on b")
        sync_stores(StoreSide(a, "a"), RacingSide(b, "b", lambda ids: b.delete(copy)), allow_deletes=100)
        assert held(a, copy) and not linked(a, copy, memory)  # the removal came before the copy's delete
        sync(a, b)
        assert not held(a, copy)
        restore(a, copy)
        assert linked(a, copy, memory)
        import_jsonl(b, [json.dumps(value) for value in iter_export(a)], skip_existing=True)
        assert linked(b, copy, memory)
        for _ in range(2):
            sync(a, b)
        for store in (a, b):
            assert held(store, copy) and linked(store, copy, memory)
            shown = [r["memory"]["id"] for r in store.recall("team offsite", limit=10)["results"]]
            assert memory in shown and copy not in shown
