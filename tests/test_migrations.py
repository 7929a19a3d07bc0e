"""Schema migrations, refusing foreign or newer files, and embedder/dimension checks at open."""

from __future__ import annotations

import json

import apsw
import pytest

from localmem import ConfigError, MemoryStore
from localmem.storage.database import connect
from localmem.storage.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from localmem.storage.statements import Statements
from tests.store_helpers import FIXED_ISO, FIXED_NOW, counts, fts_ids, new_store, scalar

OLD_ID = "11111111-2222-4333-8444-555555555555"


def meta(conn_or_store, key):
    conn = getattr(conn_or_store, "conn", conn_or_store)
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def make_v1_file(path) -> None:
    """A database as localmem schema version 1 left it, with one memory in it."""
    conn = connect(path)
    assert migrate(conn, Statements(), target=1) == 1
    with conn:
        conn.execute(
            "INSERT INTO memories (id, content, summary, type, confidence, importance, tags, "
            "timestamp, updated_at, last_accessed, t_valid, metadata) VALUES "
            "(?, ?, ?, 'Insight', 0.6, 0.7, ?, ?, ?, ?, ?, ?)",
            (OLD_ID, "Legacy zebra crossing memo", "Legacy zebra crossing memo",
             json.dumps(["Archive:Old", "giraffe"]), FIXED_ISO, FIXED_ISO, FIXED_ISO,
             FIXED_ISO, json.dumps({"from": "v1"})),
        )
        # Version 1 already had the tag tables; a v1 writer filled them too.
        conn.execute("INSERT INTO memory_tags (tag, pk) SELECT value, 1 FROM json_each(?)",
                     (json.dumps(["archive:old", "giraffe"]),))
        conn.execute("INSERT INTO memory_tag_prefixes (prefix, pk) SELECT value, 1 FROM json_each(?)",
                     (json.dumps(["archive", "archive:old", "giraffe"]),))
    conn.close()


# --- fresh files ------------------------------------------------------------------


def test_new_store_is_at_latest_version(tmp_path):
    with new_store(str(tmp_path / "m.db")) as s:
        assert LATEST_VERSION == len(MIGRATIONS)
        assert meta(s, "schema_version") == str(LATEST_VERSION)
        assert schema_version(s.conn) == LATEST_VERSION
        assert meta(s, "dimensions") == "384"
        assert meta(s, "embedder") == "hash"
        assert s.health()["schema_version"] == LATEST_VERSION


def test_migrate_reports_version_and_is_idempotent(tmp_path):
    conn = connect(tmp_path / "m.db")
    sql = Statements()
    assert schema_version(conn) == 0
    assert migrate(conn, sql, target=1) == 1
    assert schema_version(conn) == 1
    assert migrate(conn, sql) == LATEST_VERSION
    assert migrate(conn, sql) == LATEST_VERSION
    assert schema_version(conn) == LATEST_VERSION
    conn.close()


def test_reopening_does_not_repeat_migrations(tmp_path):
    path = str(tmp_path / "m.db")
    with new_store(path) as s:
        s.store("only once")
    with new_store(path) as s:
        c = counts(s)
        assert (c["memories"], c["memories_fts"], c["vector_codes"]) == (1, 1, 1)


# --- upgrading an old file ---------------------------------------------------------


def test_version_1_file_is_migrated_and_backfilled(tmp_path):
    path = str(tmp_path / "old.db")
    make_v1_file(path)
    with new_store(path) as s:
        assert meta(s, "schema_version") == str(LATEST_VERSION)
        assert s.health()["schema_version"] == LATEST_VERSION
        # The FTS backfill indexed the old memory's content and tags.
        assert fts_ids(s, "zebra") == {OLD_ID}
        assert fts_ids(s, "giraffe") == {OLD_ID}
        assert fts_ids(s, "archive") == {OLD_ID}
        memory = s.get(OLD_ID)
        assert (memory["content"], memory["importance"], memory["metadata"], memory["context"]) == (
            "Legacy zebra crossing memo", 0.7, {"from": "v1"}, "default")
        # v1 rows had no embedding: the memory is there, just without a vector.
        health = s.health()
        assert (health["memory_count"], health["fts_count"], health["vector_count"]) == (1, 1, 0)
        assert health["memories_without_embedding"] == 1
        assert health["indexes_agree"] is True
        assert [m["id"] for m in s.by_tag("GIRAFFE")["memories"]] == [OLD_ID]
        # The migrated file takes new writes normally.
        new_id = s.store("A fresh zebra note")
        assert fts_ids(s, "zebra") == {OLD_ID, new_id}
        s.update(OLD_ID, content="Rewritten legacy memo")
        assert fts_ids(s, "zebra") == {new_id}
        assert fts_ids(s, "rewritten") == {OLD_ID}


def test_migration_of_empty_version_1_file(tmp_path):
    path = tmp_path / "old.db"
    conn = connect(path)
    migrate(conn, Statements(), target=1)
    conn.close()
    with new_store(str(path)) as s:
        assert meta(s, "schema_version") == str(LATEST_VERSION)
        assert counts(s)["memories_fts"] == 0


# --- files localmem must refuse ----------------------------------------------------


def test_newer_schema_version_is_refused(tmp_path):
    path = str(tmp_path / "future.db")
    with new_store(path) as s:
        s.store("from the future")
        with s.conn:
            s.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ConfigError) as excinfo:
        new_store(path)
    message = excinfo.value.message
    assert "99" in message and str(LATEST_VERSION) in message and "upgrade localmem" in message
    assert excinfo.value.code == 500
    # Nothing was touched.
    conn = apsw.Connection(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "99"
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    conn.close()


def test_migrate_refuses_newer_version_directly(tmp_path):
    conn = connect(tmp_path / "m.db")
    migrate(conn, Statements())
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(LATEST_VERSION + 1),))
    with pytest.raises(ConfigError, match=f"schema version {LATEST_VERSION + 1} is newer"):
        migrate(conn, Statements())
    conn.close()


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = str(tmp_path / "other.db")
    conn = apsw.Connection(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.close()
    with pytest.raises(ConfigError, match="Not a localmem database"):
        new_store(path)
    conn = apsw.Connection(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"customers"}
    assert conn.execute("SELECT name FROM customers").fetchall() == [("Ada",)]
    conn.close()


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not a database, just some text that is long enough " * 20)
    with pytest.raises(ConfigError):
        new_store(str(path))


def test_unwritable_location_is_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="Cannot create database file"):
        new_store(str(blocker / "sub" / "m.db"))


# --- embedder and dimension recorded in the file ----------------------------------------


def test_dimension_mismatch_names_both(tmp_path):
    path = str(tmp_path / "m.db")
    with new_store(path, embedder="hash") as s:
        s.store("x")
    with pytest.raises(ConfigError) as excinfo:
        new_store(path, embedder="hash:64")
    message = excinfo.value.message
    assert "384" in message and "64" in message
    assert "'hash'" in message and "'hash-64'" in message
    # The refused open changed nothing; the right embedder still opens it.
    with new_store(path, embedder="hash") as s:
        assert meta(s, "dimensions") == "384"
        assert counts(s)["memories"] == 1


def test_dimensions_recorded_only_once_known(tmp_path):
    path = str(tmp_path / "m.db")
    with new_store(path, embedder="none") as s:
        s.store("before any vectors")
        assert meta(s, "dimensions") is None
        assert counts(s)["vector_codes"] == 0
    with new_store(path, embedder="hash:16") as s:
        assert (meta(s, "dimensions"), meta(s, "embedder")) == ("16", "hash-16")
        new_id = s.store("after")
        assert counts(s)["vector_codes"] == 1
        assert s.health()["memories_without_embedding"] == 1
        assert s.get(new_id)
    with pytest.raises(ConfigError, match="16 dimensions"):
        new_store(path, embedder="hash")


def test_opening_with_embedder_none_keeps_recorded_dimension(tmp_path):
    path = str(tmp_path / "m.db")
    with new_store(path, embedder="hash:16") as s:
        s.store("embedded")
    with new_store(path, embedder="none") as s:
        assert s.dimensions == 16
        s.store("not embedded")
        health = s.health()
        assert (health["memory_count"], health["vector_count"], health["indexes_agree"]) == (2, 1, True)


class Duck:
    name = "my-model"
    dimensions = 384

    def embed(self, texts):
        return [[1.0] + [0.0] * 383 for _ in texts]


def test_same_dimension_different_embedder_warns(tmp_path):
    path = str(tmp_path / "m.db")
    with new_store(path, embedder="hash"):
        pass
    with pytest.warns(UserWarning, match="'hash'.*'my-model'"):
        s = new_store(path, embedder=Duck())
    s.close()


@pytest.mark.parametrize("bad", ["hash:abc", "hash:0", "", 42])
def test_bad_embedder_spec_is_config_error(bad):
    with pytest.raises(ConfigError):
        MemoryStore(":memory:", embedder=bad, clock=lambda: FIXED_NOW)


def test_embedder_reporting_zero_dimensions_is_refused():
    class Zero(Duck):
        dimensions = 0

    with pytest.raises(ConfigError):
        MemoryStore(":memory:", embedder=Zero())


def test_embedder_returning_wrong_count_is_config_error():
    class Short(Duck):
        def embed(self, texts):
            return []

    with new_store(embedder=Short()) as s:
        with pytest.raises(ConfigError, match="returned 0 vectors for 1 texts"):
            s.store("x")
        assert scalar(s, "SELECT count(*) FROM memories") == 0


def test_version_8_push_map_survives_migration_10_and_pull_state_starts_empty(tmp_path):
    """Migration 10 adds pull's state (pull_remotes, pull_seen) and leaves push's id map as it was:
    a file pushed before can be pulled into without pushing everything again."""
    path = str(tmp_path / "v8.db")
    make_v1_file(path)
    conn = connect(path)
    assert migrate(conn, Statements(), target=8) == 8
    with conn:
        conn.execute("INSERT INTO push_remotes (remote, kind, first_push, last_push) VALUES "
                     "('http://127.0.0.1:1', 'automem', ?, ?)", (FIXED_ISO, FIXED_ISO))
        conn.execute("INSERT INTO push_ids (remote, local_id, remote_id, pushed_seq, fields) VALUES "
                     "('http://127.0.0.1:1', ?, 'remote-1', 1, '{}')", (OLD_ID,))
    assert migrate(conn, Statements()) == LATEST_VERSION
    assert conn.execute("SELECT local_id, remote_id, pushed_seq FROM push_ids").fetchall() == [
        (OLD_ID, "remote-1", 1)]
    assert conn.execute("SELECT count(*) FROM pull_remotes").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pull_seen").fetchone()[0] == 0
    # pull_seen rows belong to a registered remote (the foreign key holds).
    with pytest.raises(apsw.ConstraintError):
        with conn:
            conn.execute("INSERT INTO pull_seen (remote, remote_id, fields) VALUES ('nowhere', 'x', '{}')")
    conn.close()


def test_migration_9_gives_the_store_an_identity_and_logs_existing_edges_for_sync(tmp_path):
    """Sync's schema: a store id, and every edge already there in the edge log (a first sync sends it)."""
    path = str(tmp_path / "v8.db")
    make_v1_file(path)
    conn = connect(path)
    assert migrate(conn, Statements(), target=8) == 8
    other = "22222222-2222-4222-8222-222222222222"
    with conn:
        conn.execute("INSERT INTO memories (id, content, summary, type, confidence, importance, tags, timestamp, last_accessed, "
                     "updated_at, metadata) VALUES (?, 'second', 'second', 'Context', 0.5, 0.5, '[]', ?, ?, ?, '{}')",
                     (other, FIXED_ISO, FIXED_ISO, FIXED_ISO))
        conn.execute("INSERT INTO edges (src, dst, type, strength, updated_at, properties) "
                     "SELECT a.pk, b.pk, 'RELATES_TO', 0.5, ?, '{}' FROM memories a, memories b "
                     "WHERE a.id = ? AND b.id = ?", (FIXED_ISO, OLD_ID, other))
    assert migrate(conn, Statements()) == LATEST_VERSION
    (store_id,) = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    assert len(store_id) == 32
    # Logged by migration 9; since schema 19 the change number lives in the edge's own row.
    assert conn.execute("SELECT a.id, e.type, b.id, e.seq > 0 FROM edges e JOIN memories a ON a.pk = e.src "
                        "JOIN memories b ON b.pk = e.dst").fetchall() == [(OLD_ID, "RELATES_TO", other, 1)]
    conn.close()
