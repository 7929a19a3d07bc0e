"""MemoryStore reads and lifecycle: get, by_tag, health, close, degraded mode, file modes."""

from __future__ import annotations

import os
import stat

import apsw
import pytest

from localmem import MemoryStore, NotFoundError, ValidationError
from localmem.embedders import EmbedderUnavailable
from localmem.storage.records import RECORD_FIELDS
from localmem.storage.migrations import LATEST_VERSION
from tests.store_helpers import (
    FIXED_ISO,
    FIXED_NOW,
    assert_rejected,
    counts,
    new_store,
    scalar,
)

MISSING_ID = "6f1e1b8a-0000-4000-8000-000000000000"


@pytest.fixture
def store():
    s = MemoryStore(":memory:", embedder="hash", clock=lambda: FIXED_NOW)
    yield s
    s.close()


# --- get ----------------------------------------------------------------------


def test_get_returns_exactly_the_record_fields(store):
    memory = store.get(store.store("x", tags=["a"]))
    assert tuple(memory) == RECORD_FIELDS


def test_get_accepts_uppercase_and_padded_ids(store):
    memory_id = store.store("x")
    assert store.get(f"  {memory_id.upper()} ")["id"] == memory_id


def test_get_missing_is_not_found(store):
    store.store("x")
    assert_rejected(store, lambda: store.get(MISSING_ID), NotFoundError, "Memory not found")


@pytest.mark.parametrize("bad", ["not-a-uuid", "", None, 42, ["list"]])
def test_get_malformed_id(store, bad):
    assert_rejected(store, lambda: store.get(bad), ValidationError, "memory_id must be a valid UUID")


# --- by_tag -------------------------------------------------------------------


@pytest.fixture
def tagged(store):
    """Memories whose by_tag order is known: importance desc, timestamp desc, id asc."""
    ids = {}
    ids["high"] = store.store("high", tags=["Work"], importance=0.9)
    ids["mid_new"] = store.store("mid new", tags=["work", "urgent"], importance=0.5,
                                 timestamp="2024-04-01T00:00:00Z")
    ids["mid_old"] = store.store("mid old", tags=["WORK"], importance=0.5,
                                 timestamp="2024-03-01T00:00:00Z")
    ids["tie_b"] = store.store("tie b", tags=["work"], importance=0.2,
                               timestamp="2024-01-01T00:00:00Z",
                               id="bbbbbbbb-0000-4000-8000-000000000000")
    ids["tie_a"] = store.store("tie a", tags=["work"], importance=0.2,
                               timestamp="2024-01-01T00:00:00Z",
                               id="aaaaaaaa-0000-4000-8000-000000000000")
    ids["home"] = store.store("home", tags=["home"], importance=1.0)
    ids["nested"] = store.store("nested", tags=["work:project"], importance=1.0)
    ids["none"] = store.store("untagged", importance=1.0)
    store.ids = ids
    return store


def contents(result):
    return [m["content"] for m in result["memories"]]


def test_by_tag_result_shape(tagged):
    result = tagged.by_tag("home")
    assert result == {
        "status": "success", "tags": ["home"], "count": 1, "limit": 20, "offset": 0,
        "has_more": False, "memories": [tagged.get(tagged.ids["home"])],
    }


def test_by_tag_exact_case_insensitive_and_ordered(tagged):
    result = tagged.by_tag("wOrK")
    assert result["tags"] == ["work"]
    # "work:project" is a different tag: by_tag is exact, not prefix.
    assert contents(result) == ["high", "mid new", "mid old", "tie a", "tie b"]
    assert result["count"] == 5


def test_by_tag_any_of(tagged):
    assert contents(tagged.by_tag(["home", "urgent"])) == ["home", "mid new"]
    assert contents(tagged.by_tag("home, urgent")) == ["home", "mid new"]  # comma-separated string
    # A memory matching several of the tags appears once.
    assert contents(tagged.by_tag(["work", "urgent", "WORK"])) == [
        "high", "mid new", "mid old", "tie a", "tie b"]


def test_by_tag_nested_tag_exact(tagged):
    assert contents(tagged.by_tag("work:project")) == ["nested"]


def test_by_tag_unknown_tag_is_empty(tagged):
    result = tagged.by_tag("nothing-here")
    assert (result["count"], result["memories"], result["has_more"]) == (0, [], False)
    assert "next_offset" not in result


def test_by_tag_paging(tagged):
    first = tagged.by_tag("work", limit=2)
    assert contents(first) == ["high", "mid new"]
    assert (first["count"], first["limit"], first["offset"], first["has_more"], first["next_offset"]) == (
        2, 2, 0, True, 2)
    second = tagged.by_tag("work", limit=2, offset=first["next_offset"])
    assert contents(second) == ["mid old", "tie a"]
    assert second["next_offset"] == 4
    last = tagged.by_tag("work", limit=2, offset=second["next_offset"])
    assert contents(last) == ["tie b"]
    assert last["has_more"] is False and "next_offset" not in last
    beyond = tagged.by_tag("work", limit=2, offset=50)
    assert (beyond["count"], beyond["has_more"]) == (0, False)


def test_by_tag_exact_page_boundary_has_no_more(tagged):
    result = tagged.by_tag("work", limit=5)
    assert result["count"] == 5 and result["has_more"] is False


def test_by_tag_includes_superseded_and_archived(store):
    old = store.store("old", tags=["t"])
    store.supersede(old, "new", tags=["t"])
    store.store("archived", tags=["t"], archived=True)
    assert sorted(contents(store.by_tag("t"))) == ["archived", "new", "old"]


def test_by_tag_limit_is_clamped(store):
    store.store_many([{"content": f"m{n}", "tags": ["bulk"]} for n in range(205)], batch_size=512)
    result = store.by_tag("bulk", limit=1000)
    assert (result["limit"], result["count"], result["has_more"], result["next_offset"]) == (
        200, 200, True, 200)
    assert store.by_tag("bulk", limit=0)["limit"] == 1
    assert store.by_tag("bulk", limit=-5)["limit"] == 1
    assert store.by_tag("bulk", limit="3")["count"] == 3
    assert store.by_tag("bulk", offset=200)["count"] == 5


@pytest.mark.parametrize(
    ("tags", "kwargs", "message"),
    [
        (None, {}, "'tags' query parameter is required"),
        ([], {}, "'tags' query parameter is required"),
        ("", {}, "'tags' query parameter is required"),
        (" , ,", {}, "'tags' query parameter is required"),
        (["  "], {}, "'tags' query parameter is required"),
        (5, {}, "'tags' must be a list of strings or a single string"),
        ([5], {}, "'tags' must be a list of strings or a single string"),
        ({"work": 1}, {}, "'tags' must be a list of strings or a single string"),
        (["\ud800"], {}, "Tags must be valid Unicode text"),
        ("work", {"offset": -1}, "'offset' must be a non-negative integer"),
        ("work", {"offset": -100}, "'offset' must be a non-negative integer"),
        ("work", {"offset": "abc"}, "'offset' must be an integer"),
        ("work", {"offset": 1.5}, "'offset' must be an integer"),
        ("work", {"limit": "abc"}, "'limit' must be an integer"),
        ("work", {"limit": True}, "'limit' must be an integer"),
        ("work", {"limit": float("nan")}, "'limit' must be an integer"),
    ],
)
def test_by_tag_rejects_bad_input(tagged, tags, kwargs, message):
    assert_rejected(tagged, lambda: tagged.by_tag(tags, **kwargs), ValidationError, message)


# --- health -------------------------------------------------------------------


def test_health_counts_agree_with_sql(store):
    a = store.store("one", tags=["x", "y"])
    b = store.store("two", tags=["x"])
    store.store("three")
    store.associate(a, b)
    health = store.health()
    direct = counts(store)
    assert health["memory_count"] == direct["memories"] == 3
    assert health["vector_count"] == direct["vector_codes"] == 3
    assert health["embedding_count"] == direct["memory_embeddings"] == 3
    assert health["fts_count"] == direct["memories_fts"] == 3
    assert health["edge_count"] == direct["edges"] == 1
    assert health["tag_count"] == direct["memory_tags"] == 3
    assert health["memories_without_embedding"] == 0
    assert health["indexes_agree"] is True
    assert health["status"] == "healthy"
    # query_int8: the hash embedder has no query graph to quantise, whatever LOCALMEM_QUERY_INT8 says
    assert health["embedder"] == {"name": "hash", "dimensions": 384, "recorded": "hash",
                                  "available": True, "error": None, "query_int8": False}
    assert health["schema_version"] == health["latest_schema_version"] == LATEST_VERSION
    assert health["path"] == ":memory:"
    assert health["file_size_bytes"] == 0


def test_health_of_empty_store(store):
    health = store.health()
    assert [health[k] for k in ("memory_count", "vector_count", "fts_count", "edge_count")] == [0] * 4
    assert health["status"] == "healthy"


def test_health_detects_index_drift(store):
    memory_id = store.store("one")
    pk = scalar(store, "SELECT pk FROM memories WHERE id = ?", (memory_id,))
    with store.conn:
        store.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))
    health = store.health()
    assert (health["fts_count"], health["indexes_agree"], health["status"]) == (0, False, "degraded")


def test_health_detects_missing_tag_rows(store):
    memory_id = store.store("one", tags=["t"])
    with store.conn:
        store.conn.execute("DELETE FROM memory_tags")
    assert store.health()["indexes_agree"] is False
    assert memory_id


def test_health_reports_file_size(tmp_path):
    path = tmp_path / "mem.db"
    with new_store(str(path)) as s:
        s.store("x")
        health = s.health()
        assert health["path"] == str(path)
        assert health["file_size_bytes"] > 0


# --- close / context manager ----------------------------------------------------


def test_close_is_idempotent(store):
    store.close()
    store.close()
    with pytest.raises(apsw.ConnectionClosedError):
        store.get(MISSING_ID)


def test_context_manager_closes_and_data_persists(tmp_path):
    path = tmp_path / "mem.db"
    with MemoryStore(path, embedder="hash", clock=lambda: FIXED_NOW) as s:
        memory_id = s.store("persist me", tags=["keep"])
        s.update(memory_id, importance=0.75)
    with pytest.raises(apsw.ConnectionClosedError):
        s.store("after close")
    with MemoryStore(str(path), embedder="hash", clock=lambda: FIXED_NOW) as reopened:
        memory = reopened.get(memory_id)
        assert (memory["content"], memory["importance"], memory["timestamp"]) == (
            "persist me", 0.75, FIXED_ISO)
        assert reopened.by_tag("keep")["count"] == 1
        assert reopened.health()["indexes_agree"] is True


def test_context_manager_closes_on_error(tmp_path):
    with pytest.raises(ValidationError):
        with MemoryStore(tmp_path / "mem.db", embedder="hash") as s:
            s.store("")
    with pytest.raises(apsw.ConnectionClosedError):
        s.health()


def test_repr(store):
    assert repr(store) == "MemoryStore(':memory:', embedder='hash')"


# --- degraded mode: no vectors ----------------------------------------------------


def test_embedder_none_stores_without_vectors():
    with new_store(embedder="none") as s:
        memory_id = s.store("The billing service uses PostgreSQL", tags=["db"])
        assert s.get(memory_id)["content"] == "The billing service uses PostgreSQL"
        c = counts(s)
        assert (c["memories"], c["memories_fts"], c["memory_embeddings"], c["vector_codes"]) == (1, 1, 0, 0)
        health = s.health()
        assert health["embedder"]["name"] == "none"
        assert health["embedder"]["dimensions"] is None
        assert health["embedder"]["available"] is False
        assert health["memories_without_embedding"] == 1
        assert health["indexes_agree"] is True
        s.update(memory_id, content="The billing service uses SQLite")
        assert s.health()["indexes_agree"] is True


def test_embedder_none_recall_is_keyword_only_and_degraded():
    with new_store(embedder="none") as s:
        hit = s.store("The billing service uses PostgreSQL")
        s.store("Cats sleep most of the day")
        result = s.recall("billing", now=FIXED_NOW)
        assert result["vector_search"]["enabled"] is False
        assert result["degraded"] is True
        assert result["degraded_reason"] == "embedding_unavailable"
        assert [r["id"] for r in result["results"]] == [hit]


class UnavailableDuck:
    """A duck-typed embedder whose model cannot run."""

    name = "flaky-model"
    dimensions = 8

    def embed(self, texts):
        raise EmbedderUnavailable("flaky-model is offline")


def test_unavailable_embedder_store_succeeds_without_vector():
    with new_store(embedder=UnavailableDuck()) as s:
        memory_id = s.store("The billing service uses PostgreSQL")
        [other] = s.store_many([{"content": "Invoices are sent monthly"}])
        assert s.get(memory_id)["content"] == "The billing service uses PostgreSQL"
        assert s.get(other)
        c = counts(s)
        assert (c["memories"], c["memories_fts"], c["memory_embeddings"], c["vector_codes"]) == (2, 2, 0, 0)
        health = s.health()
        assert health["embedder"]["available"] is False
        assert "flaky-model is offline" in health["embedder"]["error"]
        assert health["embedder"]["dimensions"] == 8

        result = s.recall("billing", now=FIXED_NOW)
        assert result["vector_search"]["enabled"] is False
        assert result["degraded"] is True
        assert result["degraded_reason"] == "embedding_unavailable"
        assert [r["id"] for r in result["results"]] == [memory_id]


def test_update_with_unavailable_embedder_removes_old_vector(tmp_path):
    # A vector of the old content would be stale: while the model is down it is dropped.
    path = str(tmp_path / "mem.db")
    with new_store(path, embedder="hash:8") as s:
        memory_id = s.store("old words")
        assert counts(s)["vector_codes"] == 1
    with pytest.warns(UserWarning, match="mixes vector spaces"):
        s = new_store(path, embedder=UnavailableDuck())
    with s:
        s.update(memory_id, content="new words")
        c = counts(s)
        assert (c["memory_embeddings"], c["vector_codes"]) == (0, 0)
        assert s.health()["indexes_agree"] is True


# --- file permissions ---------------------------------------------------------------


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_database_file_is_private(tmp_path):
    path = tmp_path / "new" / "sub" / "memory.db"
    with new_store(str(path)) as s:
        assert mode(path) == 0o600
        assert mode(path.parent) == 0o700
        s.store("secret")
        wal = path.with_name(path.name + "-wal")
        assert wal.exists()
        assert mode(wal) == 0o600
        shm = path.with_name(path.name + "-shm")
        if shm.exists():
            assert mode(shm) == 0o600


def test_private_file_despite_permissive_umask(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "memory.db"
        with new_store(str(path)) as s:
            s.store("secret")
            assert mode(path) == 0o600
            assert mode(str(path) + "-wal") == 0o600
    finally:
        os.umask(old)


def test_existing_file_mode_is_left_alone(tmp_path):
    path = tmp_path / "memory.db"
    with new_store(str(path)):
        pass
    os.chmod(path, 0o640)
    with new_store(str(path)):
        assert mode(path) == 0o640


def test_file_store_uses_wal(tmp_path):
    with new_store(str(tmp_path / "m.db")) as s:
        assert scalar(s, "PRAGMA journal_mode") == "wal"
        assert scalar(s, "PRAGMA foreign_keys") == 1
