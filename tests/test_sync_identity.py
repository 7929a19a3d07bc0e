"""Identity that survives copies (issue 42, item 4): a `localmem backup` copy and a restored
store each get a new store identity, so no peer takes one file for another.

On f49a3c6 (and on main before this change), syncing with a backup copy marked changes as sent
to the original store, which never received them; and after `localmem restore` a peer never
resent what it had already sent before the restore.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem import MemoryStore
from test_sync_hostile_remote import cli


def contents(path: Path) -> set[str]:
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        return {row[0] for row in store.conn.execute("SELECT content FROM memories")}


def store_id(path: Path) -> str:
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        return store.conn.execute(store.sql["sync_store_id"]).fetchone()[0]


def write(path: Path, *texts: str) -> None:
    with MemoryStore(path, embedder="hash") as store:
        for text in texts:
            store.store(text)


def ok(run) -> None:
    assert run.returncode == 0, run.stderr


def test_syncing_with_a_backup_copy_does_not_mark_changes_as_sent_to_the_original(tmp_path):
    laptop, desktop, copy = tmp_path / "laptop.db", tmp_path / "desktop.db", tmp_path / "nas" / "laptop-copy.db"
    write(laptop, "The laptop's first note")
    write(desktop, "The desktop's first note")
    ok(cli(laptop, "backup", str(copy)))
    assert store_id(copy) != store_id(laptop)
    ok(cli(desktop, "sync", str(copy)))  # the desktop syncs with the copy on the NAS
    assert "The desktop's first note" in contents(copy)
    ok(cli(desktop, "sync", str(laptop)))  # ... and later with the laptop itself
    assert contents(laptop) == contents(desktop) == {"The laptop's first note", "The desktop's first note"}


def test_a_backup_copy_syncs_with_its_original_as_another_store(tmp_path):
    laptop, copy = tmp_path / "laptop.db", tmp_path / "laptop-copy.db"
    write(laptop, "Written before the backup")
    ok(cli(laptop, "backup", str(copy)))
    write(copy, "Written into the copy")
    write(laptop, "Written after the backup")
    ok(cli(laptop, "sync", str(copy)))
    both = {"Written before the backup", "Written into the copy", "Written after the backup"}
    assert contents(laptop) == contents(copy) == both


@pytest.mark.parametrize("runner", ["laptop", "desktop"])
def test_after_a_restore_the_peer_resends_what_the_restored_store_no_longer_holds(tmp_path, runner):
    laptop, desktop, saved = tmp_path / "laptop.db", tmp_path / "desktop.db", tmp_path / "saved.db"
    write(laptop, "Kept in the backup")
    with MemoryStore(laptop, embedder="hash") as store:
        deleted = store.store("Deleted on the laptop after the backup")
    write(desktop, "Written on the desktop before the backup")
    ok(cli(laptop, "sync", str(desktop)))
    ok(cli(laptop, "backup", str(saved)))
    with MemoryStore(laptop, embedder="hash") as store:
        store.delete(deleted)
    write(laptop, "Written on the laptop after the backup")
    write(desktop, "Written on the desktop after the backup")
    ok(cli(laptop, "sync", str(desktop)))
    before = store_id(laptop)
    ok(cli(laptop, "restore", str(saved)))
    assert store_id(laptop) not in (before, store_id(saved))
    assert "Written on the desktop after the backup" not in contents(laptop)
    assert "Deleted on the laptop after the backup" in contents(laptop)
    # The sync brings back everything the restore took away, the deletion too (it is in the trash).
    ok(cli(laptop, "sync", str(desktop)) if runner == "laptop" else cli(desktop, "sync", str(laptop)))
    everything = {"Kept in the backup", "Written on the desktop before the backup",
                  "Written on the laptop after the backup", "Written on the desktop after the backup"}
    assert contents(laptop) == contents(desktop) == everything


def test_a_restored_store_keeps_what_it_agreed_with_its_peer_so_an_older_version_is_no_conflict(tmp_path):
    laptop, desktop, saved = tmp_path / "laptop.db", tmp_path / "desktop.db", tmp_path / "saved.db"
    with MemoryStore(laptop, embedder="hash") as store:
        memory_id = store.store("The meeting is on Monday")
    MemoryStore(desktop, embedder="hash").close()
    ok(cli(laptop, "sync", str(desktop)))
    ok(cli(laptop, "backup", str(saved)))
    with MemoryStore(desktop, embedder="hash") as store:
        store.update(memory_id, content="The meeting moved to Tuesday")
    ok(cli(laptop, "sync", str(desktop)))
    ok(cli(laptop, "restore", str(saved)))
    # The desktop runs this sync: it has no agreed versions for the laptop's new identity, but the
    # laptop kept its own (under the desktop's identity): its Monday version is older, not a conflict.
    run = cli(desktop, "sync", str(laptop), "--json")
    ok(run)
    assert json.loads(run.stdout)["conflicts"] == []
    assert contents(laptop) == contents(desktop) == {"The meeting moved to Tuesday"}
