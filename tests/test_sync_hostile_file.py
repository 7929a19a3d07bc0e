"""`localmem sync FILE` with a peer file that may come from anywhere (issue 42, item 7).

Each test here failed on f49a3c6: the peer's own triggers ran on the sync's connection,
special files were opened (and given a new mode), a 1 MB store id was copied into the
local store for every memory, a dry run upgraded the peer's schema, and a non-numeric
schema_version ended in a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from localmem import MemoryStore
from localmem.storage.database import connect
from localmem.storage.migrations import LATEST_VERSION, migrate
from localmem.storage.statements import Statements

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, db: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def two_stores(tmp_path: Path, count: int = 20) -> tuple[Path, Path]:
    local, peer = tmp_path / "local.db", tmp_path / "peer.db"
    with MemoryStore(local, embedder="hash") as store:
        store.store_many([{"content": f"local note number {n}"} for n in range(count)])
    with MemoryStore(peer, embedder="hash") as store:
        store.store("a note on the peer")
    return local, peer


def count(path: Path) -> int:
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        return store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]


def alter(path: Path, statement: str) -> None:
    conn = apsw.Connection(str(path))
    try:
        conn.execute(statement)
    finally:
        conn.close()


def digest_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("statement, named", [
    ("CREATE TRIGGER wipe AFTER INSERT ON sync_echo BEGIN DELETE FROM memories; END", "unknown trigger 'wipe'"),
    ("CREATE TRIGGER wipe_too AFTER INSERT ON memories BEGIN DELETE FROM memories WHERE id <> new.id; END",
     "unknown trigger 'wipe_too'"),
    ("CREATE VIEW extra AS SELECT 1", "unknown view 'extra'"),
])
def test_a_peer_with_its_own_triggers_or_views_is_refused_by_name_and_nothing_is_deleted(
        tmp_path, statement, named):
    local, peer = two_stores(tmp_path)
    alter(peer, statement)
    before = digest_of(peer)
    for _ in range(2):  # on f49a3c6, two syncs deleted every local memory
        run = cli("sync", str(peer), "--json", db=local)
        assert run.returncode == 1, run.stdout
        assert named in run.stderr and "Traceback" not in run.stderr
    assert count(local) == 20
    assert digest_of(peer) == before


def test_a_peer_whose_memories_table_is_a_view_is_refused_before_any_row_is_read(tmp_path):
    local, peer = two_stores(tmp_path)
    alter(peer, "ALTER TABLE memories RENAME TO memories_real")
    alter(peer, "CREATE VIEW memories AS SELECT * FROM memories_real")
    run = cli("sync", str(peer), "--dry-run", "--json", db=local)
    assert run.returncode == 1
    assert "view 'memories'" in run.stderr or "altered" in run.stderr
    assert count(local) == 20


def test_an_altered_known_trigger_is_refused(tmp_path):
    local, peer = two_stores(tmp_path)
    alter(peer, "DROP TRIGGER sync_tombstone_on_insert")
    alter(peer, "CREATE TRIGGER sync_tombstone_on_insert AFTER INSERT ON memories "
                "BEGIN DELETE FROM sync_tombstones; DELETE FROM memories WHERE id <> new.id; END")
    run = cli("sync", str(peer), db=local)
    assert run.returncode == 1 and "altered trigger 'sync_tombstone_on_insert'" in run.stderr
    assert count(local) == 20


def make_fifo(path: Path) -> Path:
    os.mkfifo(path)
    os.chmod(path, 0o644)
    return path


@pytest.mark.parametrize("how", ["fifo", "symlink to a fifo"])
def test_special_files_are_refused_untouched_as_peer_and_as_db(tmp_path, how):
    local, _ = two_stores(tmp_path, count=1)
    special = make_fifo(tmp_path / "pipe")
    given = special
    if how != "fifo":
        given = tmp_path / "link"
        given.symlink_to(special)
    run = cli("sync", str(given), db=local, timeout=60)
    assert run.returncode != 0 and "a FIFO, not a database file" in run.stderr
    run = cli("stats", db=given, timeout=60)
    assert run.returncode != 0 and "a FIFO, not a database file" in run.stderr
    run = cli("sync", str(local), db=given, timeout=60)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    info = os.stat(special)
    assert stat.S_ISFIFO(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644  # on f49a3c6: 0600


def private_null_device(path: Path) -> Path:
    """A character device node like /dev/null (1, 3), made in the test's own folder (root only)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc}): the issue's root-only case")
    os.chmod(path, 0o644)
    return path


def test_a_device_node_is_refused_untouched_as_peer_and_as_db(tmp_path):
    """Issue 42: as root, ``localmem sync /dev/null`` (or ``--db /dev/null``) changed the device
    node to mode 0600. Shown on a private node, never on the system's."""
    local, _ = two_stores(tmp_path, count=1)
    device = private_null_device(tmp_path / "null")
    run = cli("sync", str(device), db=local, timeout=60)
    assert run.returncode != 0 and "Traceback" not in run.stderr and "device" in run.stderr, run.stderr
    run = cli("sync", str(local), db=device, timeout=60)
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr
    info = os.stat(device)
    assert stat.S_ISCHR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644  # on f49a3c6: 0600
    assert count(local) == 1


def test_a_peer_with_a_huge_store_id_is_refused_and_the_local_store_does_not_grow(tmp_path):
    local, peer = two_stores(tmp_path)
    alter(peer, f"UPDATE meta SET value = '{'a' * 1_000_000}' WHERE key = 'store_id'")
    size = local.stat().st_size
    run = cli("sync", str(peer), "--json", db=local)
    assert run.returncode == 1 and "malformed store identity" in run.stderr
    assert local.stat().st_size <= size + 64 * 1024
    with MemoryStore(local, embedder="hash", read_only=True) as store:
        longest = store.conn.execute("SELECT coalesce(max(length(peer)), 0) FROM sync_base").fetchone()[0]
    assert longest <= 32


def old_schema_store(path: Path, version: int) -> None:
    conn = connect(path)
    try:
        migrate(conn, Statements(), target=version)
    finally:
        conn.close()


def test_a_dry_run_writes_nothing_anywhere_not_even_the_peers_schema_upgrade(tmp_path):
    local, _ = two_stores(tmp_path)
    peer = tmp_path / "old.db"
    old_schema_store(peer, LATEST_VERSION - 1)
    files = {p: digest_of(p) for p in (local, peer)}
    run = cli("sync", str(peer), "--dry-run", "--json", db=local)
    assert {p: digest_of(p) for p in files} == files
    conn = apsw.Connection(f"file:{peer}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        conn.close()
    assert int(version) == LATEST_VERSION - 1  # on f49a3c6 the dry run upgraded it
    assert run.returncode != 0 and "read-only" in run.stderr  # and it says why it cannot look


def test_a_dry_run_leaves_both_current_files_byte_for_byte(tmp_path):
    local, peer = two_stores(tmp_path)
    files = {p: digest_of(p) for p in (local, peer)}
    run = cli("sync", str(peer), "--dry-run", "--json", db=local)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["copied_to_peer"] == 20
    assert {p: digest_of(p) for p in files} == files


def test_a_non_numeric_schema_version_is_an_error_naming_it(tmp_path):
    local, peer = two_stores(tmp_path)
    alter(peer, "UPDATE meta SET value = 'twelve' WHERE key = 'schema_version'")
    for args, db in ((("sync", str(peer)), local), (("stats",), peer)):
        run = cli(*args, db=db)
        assert run.returncode != 0
        assert "schema_version is 'twelve', not a number" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("marker", ["not a record", {"memory_id": 5}, {"kept_because": "no id"}, ["a", "list"]])
def test_a_peer_memory_with_a_malformed_conflict_marker_is_copied_as_a_plain_memory(tmp_path, marker):
    """A sync links every conflict copy it meets to the memory that won, named in the copy's
    metadata; a peer's memory whose marker names none is copied like any other, unlinked."""
    local, peer = two_stores(tmp_path, count=3)
    with MemoryStore(peer, embedder="hash") as store:
        odd = store.store("a note that says it is a conflict copy", metadata={"sync_conflict": marker})
    done = cli("sync", str(peer), "--json", db=local)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["copied_to_local"] == 2
    with MemoryStore(local, embedder="hash", read_only=True) as store:
        assert store.get(odd)["metadata"]["sync_conflict"] == marker
        assert store.conn.execute("SELECT count(*) FROM edges").fetchone()[0] == 0
