"""A byte copy of a store file (``cp``, not ``localmem backup``) is another store (issue 42, item 4).

The file records where it lives (device and inode); opened for writing somewhere else, it is a
copy and takes a new identity before it writes or syncs, so a third store syncing with both
tells them apart: nothing is lost and nothing comes back.
"""

from __future__ import annotations

import hashlib
import os
import shutil

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def identity(store: MemoryStore) -> str:
    return store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]


def contents(store: MemoryStore) -> dict[str, str]:
    return dict(store.conn.execute("SELECT id, content FROM memories"))


def test_a_byte_copy_synced_with_a_third_store_loses_nothing_and_resurrects_nothing(tmp_path):
    original_path, copy_path = tmp_path / "laptop.db", tmp_path / "laptop-copy.db"
    with MemoryStore(original_path, embedder="hash") as a, MemoryStore(tmp_path / "desk.db", embedder="hash") as c:
        m1, m2, m3 = a.store("Rota: Thursdays"), a.store("Parking on level 3"), a.store("Wifi: kestrel-5")
        sync(a, c)
        before = identity(a)
    shutil.copy(original_path, copy_path)  # the file alone: closed, so it holds every commit
    with MemoryStore(original_path, embedder="hash") as a, MemoryStore(copy_path, embedder="hash") as b, \
            MemoryStore(tmp_path / "desk.db", embedder="hash") as c:
        assert identity(a) == before and identity(b) != before  # the copy, not the original, renewed
        a.update(m1, content="Rota: Fridays")
        a.delete(m2)
        only_a = a.store("Standup at 9:45")
        b.update(m3, content="Wifi: kestrel-6")
        only_b = b.store("Release on Wednesday")
        for _ in range(2):
            sync(a, c)
            sync(b, c)
        want = {m1: "Rota: Fridays", m3: "Wifi: kestrel-6", only_a: "Standup at 9:45",
                only_b: "Release on Wednesday"}
        for store in (a, b, c):
            assert contents(store) == want  # the copy's own notes reached the original through c


def test_a_store_reopened_or_renamed_in_place_keeps_its_identity(tmp_path):
    path, moved = tmp_path / "a.db", tmp_path / "renamed.db"
    with MemoryStore(path, embedder="hash") as a:
        a.store("A note")
        first = identity(a)
    with MemoryStore(path, embedder="hash") as a:
        assert identity(a) == first
    os.rename(path, moved)  # the same file (same inode), under another name
    with MemoryStore(moved, embedder="hash") as a:
        assert identity(a) == first


def test_a_read_only_open_of_a_copy_writes_nothing(tmp_path):
    path, copy = tmp_path / "a.db", tmp_path / "copy.db"
    with MemoryStore(path, embedder="hash") as a:
        a.store("A note")
        first = identity(a)
    shutil.copy(path, copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    with MemoryStore(copy, embedder="hash", read_only=True) as b:
        assert identity(b) == first  # not renewed: a read-only store neither writes nor syncs
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest
    with MemoryStore(copy, embedder="hash") as b:  # the first writable open renews it
        assert identity(b) != first


def test_a_backup_copy_is_renewed_once_not_again_when_opened(tmp_path):
    from localmem.maintenance.backup import backup_database
    path = tmp_path / "a.db"
    with MemoryStore(path, embedder="hash") as a:
        a.store("A note")
        first = identity(a)
    written = backup_database(str(path), str(tmp_path / "backup.db"))
    with MemoryStore(written["path"], embedder="hash") as b:
        renewed = identity(b)
    with MemoryStore(written["path"], embedder="hash") as b:
        assert identity(b) == renewed != first
