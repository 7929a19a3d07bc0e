"""Resource faults: a full disk, a read-only file and an interrupted migration.

Each gives a clear error (``StorageError`` / ``ConfigError`` with a message, never a raw apsw
exception), leaves the file exactly as it was, and the file stays usable afterwards.
A full disk is simulated with ``PRAGMA max_page_count``; a read-only file by opening it
with ``SQLITE_OPEN_READONLY`` (tests run as root, for whom chmod 0400 is no barrier) or,
when not root, by chmod.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from localmem import LocalMemError, MemoryStore, StorageError
from localmem.maintenance import doctor
from localmem.storage import migrations
from localmem.cli import main as cli_main
from localmem.storage.migrations import LATEST_VERSION, schema_version
from tests.store_helpers import assert_consistent, new_store, snapshot
from tests.test_migrations import OLD_ID, make_v1_file

ROOT = Path(__file__).resolve().parent.parent


def file_digest(path: str) -> str:
    """The bytes of the database file and its WAL (what a crash would leave)."""
    digest = hashlib.sha256()
    for name in (path, path + "-wal"):
        if os.path.exists(name):
            digest.update(Path(name).read_bytes())
    return digest.hexdigest()


def fill_to_limit(store: MemoryStore, spare_pages: int = 0) -> None:
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages + spare_pages}")


@pytest.fixture
def populated(tmp_path):
    path = str(tmp_path / "full.db")
    store = new_store(path)
    first, second = store.store_many([
        {"content": "Chose Redis for the session cache", "tags": ["project:alpha"]},
        {"content": "Postgres index fixed the slow dashboard", "tags": ["db"]},
    ])
    store.associate(first, second, "RELATES_TO")
    store.ids = [first, second]  # type: ignore[attr-defined]
    yield store
    store.close()


# -- disk full --------------------------------------------------------------------------------


def test_disk_full_is_a_clear_error_and_changes_nothing(populated):
    store = populated
    fill_to_limit(store)
    before = snapshot(store)
    big = [{"content": f"bulk memory {i} " + "words " * 250, "tags": [f"bulk:{i}"]} for i in range(200)]
    calls = [
        lambda: store.store_many(big),
        lambda: store.update(store.ids[0], content="a much longer rewrite " * 80, tags=["x"] * 50,
                             metadata={"blob": "y" * 200_000}),
        lambda: store.supersede(store.ids[1], "replacement " * 150, metadata={"blob": "z" * 200_000}),
    ]
    for call in calls:
        with pytest.raises(StorageError) as excinfo:
            call()
        error = excinfo.value
        assert error.code == 507 and "disk is full" in error.message
        assert "nothing was changed" in error.message
        assert isinstance(error.__cause__, apsw.FullError)
        assert snapshot(store) == before
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert store.recall("redis cache")["results"][0]["id"] == store.ids[0]
    # Space again: the same call now works, and everything agrees.
    store.conn.execute("PRAGMA max_page_count = 4294967294")
    assert len(store.store_many(big)) == 200
    assert_consistent(store)


def test_disk_full_over_http_is_507(populated):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from localmem.http.app import create_app

    store = populated
    fill_to_limit(store)
    before = snapshot(store)
    with TestClient(create_app(store, token="t"), headers={"X-API-Key": "t"}, base_url="http://localhost",
                    raise_server_exceptions=False) as client:
        response = client.post("/memory/batch", json={"memories": [
            {"content": f"bulk {i} " + "words " * 250} for i in range(100)]})
        assert response.status_code == 507, response.text
        body = response.json()
        assert body["status"] == "error" and body["code"] == 507 and "disk is full" in body["message"]
        assert "Traceback" not in response.text
        assert client.get("/recall", params={"query": "redis"}).status_code == 200
    assert snapshot(store) == before


# -- read-only file ---------------------------------------------------------------------------


@pytest.fixture
def read_only_file(tmp_path, monkeypatch):
    path = str(tmp_path / "ro.db")
    with new_store(path) as s:
        s.store_many([{"content": "Chose Redis for the session cache", "tags": ["project:alpha"]},
                      {"content": "Postgres index fixed the slow dashboard"}])
    real = apsw.Connection

    def read_only(filename, *args, **kwargs):
        if filename == path:
            kwargs["flags"] = apsw.SQLITE_OPEN_READONLY
        return real(filename, *args, **kwargs)

    monkeypatch.setattr(apsw, "Connection", read_only)
    return path


def test_read_only_file_answers_reads_and_refuses_writes_clearly(read_only_file):
    path = read_only_file
    digest = file_digest(path)
    with new_store(path) as store:
        recalled = store.recall("redis cache")  # its last_accessed write is skipped, not an error
        assert recalled["results"] and recalled["results"][0]["memory"]["content"].startswith("Chose Redis")
        memory_id = recalled["results"][0]["id"]
        assert store.get(memory_id)["content"].startswith("Chose Redis")
        assert store.health()["indexes_agree"] is True
        assert not doctor.problems(doctor.check(store))
        for call in (lambda: store.store("new memory"),
                     lambda: store.update(memory_id, importance=0.9),
                     lambda: store.delete(memory_id),
                     lambda: store.associate(memory_id, recalled["results"][-1]["id"])
                     if len(recalled["results"]) > 1 else store.store("x")):
            with pytest.raises(StorageError) as excinfo:
                call()
            assert excinfo.value.code == 503 and "read-only" in excinfo.value.message
    assert file_digest(path) == digest


def test_read_only_file_in_the_cli(read_only_file, capsys):
    code = cli_main(["--db", read_only_file, "store", "a new memory"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("error: The database file is read-only")
    assert "Traceback" not in captured.err
    assert cli_main(["--db", read_only_file, "--json", "recall", "redis"]) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a chmod 0400 file anyway")
def test_chmod_read_only_file(tmp_path):
    path = str(tmp_path / "ro.db")
    with new_store(path) as s:
        s.store("Chose Redis for the session cache")
    os.chmod(path, 0o400)
    with new_store(path) as store:
        assert store.recall("redis")["count"] == 1
        with pytest.raises(StorageError, match="read-only"):
            store.store("more")


def test_unopenable_location_is_config_error(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(LocalMemError) as excinfo:
        new_store(str(blocker / "m.db"))
    assert "Cannot create database file" in excinfo.value.message


# -- interrupted migration --------------------------------------------------------------------


def schema_objects(path: str) -> list[tuple[str, str]]:
    conn = apsw.Connection(path)
    try:
        return sorted(conn.execute("SELECT type, name FROM sqlite_master"))
    finally:
        conn.close()


def test_failed_migration_step_leaves_the_previous_version_usable(tmp_path, monkeypatch):
    """The last step fails halfway (after doing part of its work): every earlier step stays
    committed, the failed one leaves no trace, the file works at that version, and the next
    open finishes the migration."""
    path = str(tmp_path / "old.db")
    make_v1_file(path)
    last = migrations.MIGRATIONS[-1]

    def half_done_then_crash(conn, sql):
        last(conn, sql)
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("power cut during migration")

    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:-1] + (half_done_then_crash,))
    with pytest.raises(RuntimeError, match="power cut"):
        new_store(path)
    conn = apsw.Connection(path)
    try:
        assert schema_version(conn) == LATEST_VERSION - 1
        assert conn.execute("SELECT content FROM memories WHERE id = ?", (OLD_ID,)).fetchone()[0] == \
            "Legacy zebra crossing memo"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'half_done'").fetchone()
    finally:
        conn.close()
    monkeypatch.undo()
    with new_store(path) as store:
        assert schema_version(store.conn) == LATEST_VERSION
        assert store.get(OLD_ID)["content"] == "Legacy zebra crossing memo"
        assert store.recall("zebra crossing")["results"][0]["id"] == OLD_ID
        assert not doctor.problems(doctor.check(store)) or all(
            c.name == "embeddings_missing" for c in doctor.problems(doctor.check(store)))


MIGRATION_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from localmem import MemoryStore
from localmem.storage import migrations
last = migrations.MIGRATIONS[-1]
def slow(conn, sql):
    last(conn, sql)
    print("inside", flush=True)
    time.sleep(60)
migrations.MIGRATIONS = migrations.MIGRATIONS[:-1] + (slow,)
MemoryStore(sys.argv[1], embedder="hash")
"""


def test_migration_killed_midway_leaves_the_old_schema(tmp_path):
    path = str(tmp_path / "old.db")
    make_v1_file(path)
    child = subprocess.Popen([sys.executable, "-c", MIGRATION_CHILD, path, str(ROOT)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "inside", child.stderr.read()
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    conn = apsw.Connection(path)
    try:
        assert schema_version(conn) == LATEST_VERSION - 1
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    finally:
        conn.close()
    with new_store(path) as store:
        assert schema_version(store.conn) == LATEST_VERSION
        assert store.recall("zebra")["results"][0]["id"] == OLD_ID
        new_id = store.store("A fresh note after the crash")
        assert store.get(new_id)["content"] == "A fresh note after the crash"


def test_concurrent_first_open_migrates_once(tmp_path):
    """Several processes opening a brand-new file at the same moment all succeed."""
    path = str(tmp_path / "fresh" / "m.db")
    code = ("import sys, time; sys.path.insert(0, sys.argv[3]); from localmem import MemoryStore; "
            "time.sleep(max(0, float(sys.argv[2]) - time.time())); "
            "s = MemoryStore(sys.argv[1], embedder='hash'); print(s.store('hello from ' + str(time.time()))); s.close()")
    start = time.time() + 1.5
    children = [subprocess.Popen([sys.executable, "-c", code, path, str(start), str(ROOT)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outputs = [child.communicate(timeout=60) for child in children]
    assert all(child.returncode == 0 for child in children), [err for _, err in outputs]
    with new_store(path) as store:
        assert schema_version(store.conn) == LATEST_VERSION
        assert store.health()["memory_count"] == 6
        assert_consistent(store)
    assert json.loads(json.dumps([out.strip() for out, _ in outputs]))
