"""The trash (issue 42, item 6): what a sync or pull deletes is kept 30 days, restorable with its
edges; a purge is the one deletion that keeps nothing, and a sync carries it to peers."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from localmem import MemoryStore, NotFoundError
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from localmem.trash import KEEP_DAYS, empty_trash, move_to_trash, purge, restore, trash_entries
from test_sync_hostile_remote import cli, crafted
from test_sync_mass_delete import automem_answer


def sync(a: MemoryStore, b: MemoryStore, **options):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), **options)


def ids(store: MemoryStore) -> set[str]:
    return {row[0] for row in store.conn.execute("SELECT id FROM memories")}


def test_a_memory_a_sync_deletes_goes_to_the_trash_and_comes_back_with_its_edges_everywhere(tmp_path):
    local, peer = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(local, embedder="hash") as a, MemoryStore(peer, embedder="hash") as b:
        doomed = a.store("the staging server's address is 10.0.0.7", tags=["infra"])
        other = a.store("staging is rebuilt every Monday")
        a.associate(doomed, other, "RELATES_TO", 0.8)
        sync(a, b)
        time.sleep(0.002)
        b.delete(doomed)  # deleted on the peer
        summary = sync(a, b)
        assert summary.deleted_on_local == 1 and doomed not in ids(a)
        [entry] = trash_entries(a)
        assert (entry["id"], entry["edges"]) == (doomed, 1)
        assert entry["reason"].startswith("sync with store ") and entry["content"].startswith("the staging")
    run = cli(local, "trash", "restore", doomed, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["restored"] == [doomed], run.stderr
    with MemoryStore(local, embedder="hash") as a, MemoryStore(peer, embedder="hash") as b:
        assert a.get(doomed)["tags"] == ["infra"] and trash_entries(a) == []
        assert a.conn.execute(
            "SELECT s.id, e.type, d.id, e.strength FROM edges e JOIN memories s ON s.pk = e.src "
            "JOIN memories d ON d.pk = e.dst").fetchall() == [(doomed, "RELATES_TO", other, 0.8)]
        summary = sync(a, b)  # the restore is an edit made after the delete: the peer gets it back
        assert doomed in ids(b) and b.get(doomed)["content"] == a.get(doomed)["content"]
        assert summary.edits_kept_over_deletes == [doomed]


def test_a_memory_a_pull_deletes_goes_to_the_trash(tmp_path):
    db = tmp_path / "pulled.db"
    state = {"listed": range(4)}
    with crafted(automem_answer(state)) as url:
        assert cli(db, "--embedder", "hash", "pull", url, "--token", "t").returncode == 0
        state["listed"] = range(3)  # one deleted on the server: GET /memory answers 404
        run = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json")
        assert json.loads(run.stdout)["memories"]["deleted"] == 1
    listed = cli(db, "trash", "list", "--json")
    [entry] = json.loads(listed.stdout)["trash"]
    assert entry["content"] == "server note 3" and entry["reason"].startswith("pull from http://127.0.0.1:")
    emptied = cli(db, "trash", "empty", "--json")
    assert json.loads(emptied.stdout)["removed"] == 1
    assert json.loads(cli(db, "trash", "list", "--json").stdout)["count"] == 0


def test_entries_older_than_the_keeping_time_are_removed_as_new_ones_arrive():
    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    with MemoryStore(":memory:", embedder="hash", clock=lambda: now[0]) as store:
        first, second = store.store("first"), store.store("second")
        move_to_trash(store, first, "test")
        now[0] += timedelta(days=KEEP_DAYS - 1)
        move_to_trash(store, second, "test")
        assert {e["id"] for e in trash_entries(store)} == {first, second}
        now[0] += timedelta(days=2)
        third = store.store("third")
        move_to_trash(store, third, "test")
        assert {e["id"] for e in trash_entries(store)} == {second, third}
        assert empty_trash(store) == 2 and trash_entries(store) == []
        with pytest.raises(NotFoundError):
            restore(store, first)


def test_a_purge_keeps_nothing_and_a_sync_purges_the_peer_even_over_a_later_edit(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        secret = a.store("the door code is 4711")
        sync(a, b)
        assert purge(a, secret) and secret not in ids(a) and trash_entries(a) == []
        time.sleep(0.002)
        b.update(secret, content="the door code is 4712")  # an edit after the purge, on the peer
        summary = sync(a, b)
        assert summary.deleted_on_peer == 1
        assert secret not in ids(b) and trash_entries(b) == []
        assert b.conn.execute("SELECT purged FROM sync_tombstones WHERE id = ?", (secret,)).fetchone() == (1,)
        assert summary.conflicts == [] and summary.edits_kept_over_deletes == []
        assert not any("4712" in row[0] for row in b.conn.execute("SELECT content FROM memories"))
