"""MemoryStore writes: store, store_many, update, delete, associate, supersede.

Happy paths first, then every kind of bad input (each must raise the right
error with a useful message and leave every table exactly as it was), then
index consistency and atomicity when a write fails half-way.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta, timezone

import pytest

import localmem.storage.writes
from localmem import MemoryStore, NotFoundError, ValidationError
from localmem.embedders import HashEmbedder
from localmem.relations import AUTHORABLE_TYPES
from localmem.text import generate_summary
from tests.store_helpers import (
    FIXED_ISO,
    FIXED_NOW,
    Clock,
    assert_consistent,
    assert_rejected,
    counts,
    embedding_blob,
    float32,
    fts_ids,
    new_store,
    pk_of,
    scalar,
    snapshot,
    tag_rows,
    unit_vector,
    codes_of,
    vector_blob,
)

MISSING_ID = "6f1e1b8a-0000-4000-8000-000000000000"


@pytest.fixture
def store():
    s = MemoryStore(":memory:", embedder="hash", clock=lambda: FIXED_NOW)
    yield s
    s.close()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def clocked(clock):
    """A store whose clock the test can move."""
    s = new_store(clock=clock)
    yield s
    s.close()


@pytest.fixture
def populated(store):
    """Three memories with tags, metadata and edges, so 'unchanged' means something."""
    a = store.store("We decided to use PostgreSQL for billing.", tags=["db", "Project:Billing"],
                    importance=0.8, metadata={"source": "meeting"})
    b = store.store("I prefer tea rather than coffee", tags=["drinks"])
    c = store.store("Deploys usually happen on Fridays", context="work")
    store.associate(a, b, "RELATES_TO", 0.4)
    store.associate(b, c, "LEADS_TO")
    store.ids = (a, b, c)
    return store


class CountingEmbedder:
    """The hash embedder, recording every batch it is asked to embed."""

    def __init__(self, dimensions: int = 384) -> None:
        self.inner = HashEmbedder(dimensions)
        self.name = self.inner.name
        self.dimensions = dimensions
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def hash_blob(text: str) -> bytes:
    return float32(HashEmbedder().embed([text])[0])


# --- store: defaults and fields ---------------------------------------------


def test_store_returns_id_and_get_round_trips(store):
    memory_id = store.store("Remember the milk")
    assert isinstance(memory_id, str) and len(memory_id) == 36
    assert store.get(memory_id)["content"] == "Remember the milk"


def test_store_defaults(store):
    memory = store.get(store.store("The build server is in the basement"))
    assert memory == {
        "id": memory["id"],
        "content": "The build server is in the basement",
        "summary": "The build server is in the basement",
        "type": "Context",
        "confidence": 0.3,
        "importance": 0.5,
        "tags": [],
        "tag_prefixes": [],
        "timestamp": FIXED_ISO,
        "updated_at": FIXED_ISO,
        "last_accessed": FIXED_ISO,
        "t_valid": FIXED_ISO,
        "t_invalid": None,
        "archived": False,
        "metadata": {},
        "context": "default",
        "relevance_score": None,
    }


@pytest.mark.parametrize(
    ("content", "expected_type", "expected_confidence"),
    [
        ("We decided to use PostgreSQL", "Decision", 0.6),
        ("We decided to use Postgres and opted for managed hosting", "Decision", 0.8),
        ("I usually review code in the morning", "Pattern", 0.6),
        ("I prefer tea rather than coffee", "Preference", 0.8),  # 0.6 + 0.1 per match
        ("I go for a run daily", "Habit", 0.6),
        ("I realized the cache was stale", "Insight", 0.6),
        ("This happened during the outage", "Context", 0.6),
        ("Plain words with no signal", "Context", 0.3),
    ],
)
def test_store_classifies_type_and_confidence(store, content, expected_type, expected_confidence):
    memory = store.get(store.store(content))
    assert (memory["type"], memory["confidence"]) == (expected_type, expected_confidence)


@pytest.mark.parametrize(
    ("given", "stored"),
    [("Decision", "Decision"), ("decision", "Decision"), ("INSIGHT", "Insight"),
     ("meeting notes", "Context"), ("template", "Pattern"), ("health_habits", "Habit")],
)
def test_store_explicit_type_is_canonicalised_with_confidence_09(store, given, stored):
    memory = store.get(store.store("Plain words with no signal", type=given))
    assert (memory["type"], memory["confidence"]) == (stored, 0.9)


def test_store_explicit_type_and_confidence(store):
    memory = store.get(store.store("We decided to ship", type="Insight", confidence=0.25))
    assert (memory["type"], memory["confidence"]) == ("Insight", 0.25)


def test_store_explicit_confidence_keeps_classified_type(store):
    memory = store.get(store.store("We decided to ship", confidence=0.99))
    assert (memory["type"], memory["confidence"]) == ("Decision", 0.99)


@pytest.mark.parametrize("importance", [0, 0.0, 0.25, 1, 1.0])
def test_store_importance_bounds_inclusive(store, importance):
    assert store.get(store.store("x", importance=importance))["importance"] == float(importance)


def test_store_summary_is_first_sentence(store):
    memory = store.get(store.store("First sentence here. Second one! Third?"))
    assert memory["summary"] == "First sentence here."


def test_store_long_summary_cut_at_word(store):
    content = ("word " * 100).strip()
    summary = store.get(store.store(content))["summary"]
    assert summary == generate_summary(content)
    assert len(summary) <= 240 and not summary.endswith(" ")


def test_store_explicit_summary_kept(store):
    assert store.get(store.store("Long text. More.", summary="short"))["summary"] == "short"


def test_store_strips_content(store):
    assert store.get(store.store("  padded \n"))["content"] == "padded"


def test_store_content_of_2000_chars_after_strip_is_accepted(store):
    memory_id = store.store("  " + "a" * 2000 + "  ")
    assert len(store.get(memory_id)["content"]) == 2000


def test_store_unicode_content(store):
    memory_id = store.store("Café ☕ — naïve 日本語 🚀")
    assert store.get(memory_id)["content"] == "Café ☕ — naïve 日本語 🚀"
    assert fts_ids(store, "cafe") == {memory_id}  # remove_diacritics


def test_store_given_timestamp_sets_updated_at_last_accessed_and_t_valid(store):
    memory = store.get(store.store("x", timestamp="2023-01-02T03:04:05Z"))
    expected = "2023-01-02T03:04:05+00:00"
    assert [memory[k] for k in ("timestamp", "updated_at", "last_accessed", "t_valid")] == [expected] * 4


def test_store_explicit_updated_at_and_last_accessed(store):
    memory = store.get(store.store(
        "x", timestamp="2023-01-01T00:00:00Z", updated_at="2023-02-01T00:00:00Z",
        last_accessed="2023-03-01T00:00:00Z"))
    assert memory["updated_at"] == "2023-02-01T00:00:00+00:00"
    assert memory["last_accessed"] == "2023-03-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-01T10:00:00+02:00", "2024-01-01T08:00:00+00:00"),
        ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00+00:00"),
        ("2024-01-01T10:00:00", "2024-01-01T10:00:00+00:00"),  # naive is UTC
        ("2024-01-01", "2024-01-01T00:00:00+00:00"),
        (datetime(2024, 1, 1, 10, tzinfo=timezone(timedelta(hours=-5))), "2024-01-01T15:00:00+00:00"),
        (datetime(2024, 1, 1, 10), "2024-01-01T10:00:00+00:00"),
        (0, "1970-01-01T00:00:00+00:00"),
        (1704103200.5, "2024-01-01T10:00:00.500000+00:00"),
    ],
)
def test_store_timestamp_forms_normalised_to_utc(store, value, expected):
    assert store.get(store.store("x", timestamp=value))["timestamp"] == expected


def test_store_t_valid_and_t_invalid(store):
    memory = store.get(store.store("x", t_valid="2024-01-01T00:00:00Z", t_invalid="2024-02-01T00:00:00Z"))
    assert memory["t_valid"] == "2024-01-01T00:00:00+00:00"
    assert memory["t_invalid"] == "2024-02-01T00:00:00+00:00"
    assert memory["timestamp"] == FIXED_ISO


def test_store_honours_caller_id(store):
    given = "0b0e5f6e-3c1d-4b8e-9a43-2a1f6f0d9c11"
    assert store.store("x", id=given) == given
    assert store.get(given)["id"] == given


def test_store_caller_id_is_normalised(store):
    memory_id = store.store("x", id="0B0E5F6E-3C1D-4B8E-9A43-2A1F6F0D9C11")
    assert memory_id == "0b0e5f6e-3c1d-4b8e-9a43-2a1f6f0d9c11"
    assert store.get("0B0E5F6E-3C1D-4B8E-9A43-2A1F6F0D9C11")["id"] == memory_id


def test_store_tags_and_index_rows(store):
    memory_id = store.store("x", tags=["Project:Billing/API", "db", "DB", " ", "urgent"])
    memory = store.get(memory_id)
    assert memory["tags"] == ["Project:Billing/API", "db", "urgent"]  # first spelling wins
    assert memory["tag_prefixes"] == [
        "project", "project:billing", "project:billing:api", "db", "urgent"]
    assert tag_rows(store, memory_id) == (
        ["db", "project:billing/api", "urgent"],
        ["db", "project", "project:billing", "project:billing:api", "urgent"],
    )


def test_store_tag_string_is_read_as_every_tag_input(store):
    assert store.get(store.store("x", tags="a,b"))["tags"] == ["a", "b"]  # unlike AutoMem's one tag "a,b"
    with pytest.warns(UserWarning, match=r"'work;urgent' was read as 'work', 'urgent'") as caught:
        memory_id = store.store("y", tags=["work;urgent", "#home"])
    assert store.get(memory_id)["tags"] == ["work", "urgent", "home"]
    assert len(caught) == 2 and all(w.filename == __file__ for w in caught), [w.filename for w in caught]
    with pytest.warns(UserWarning, match="'#x' was read as 'x'") as caught:
        store.update(memory_id, tags="#x")
    assert caught[0].filename == __file__


def test_store_metadata_round_trips(store):
    metadata = {"source": "chat", "n": 3, "ratio": 0.5, "ok": True, "none": None,
                "nested": {"list": [1, "two", {"three": 3}]}, "ünï": "cödé"}
    assert store.get(store.store("x", metadata=metadata))["metadata"] == metadata


def test_store_context(store):
    assert store.get(store.store("x", context="  work  "))["context"] == "work"


def test_store_relevance_score_and_archived(store):
    memory = store.get(store.store("x", relevance_score=0.7, archived=True))
    assert (memory["relevance_score"], memory["archived"]) == (0.7, True)


@pytest.mark.parametrize(("given", "stored"), [(None, False), (False, False), (0, False), (1, True)])
def test_store_archived_forms(store, given, stored):
    assert store.get(store.store("x", archived=given))["archived"] is stored


def test_store_writes_every_index(store):
    before = counts(store)
    memory_id = store.store("Kettle descaling schedule", tags=["home:kitchen"])
    after = counts(store)
    assert {k: after[k] - before[k] for k in after} == {
        "memories": 1, "memory_tags": 1, "memory_tag_prefixes": 2, "edges": 0,
        "memory_embeddings": 1, "meta": 0, "memories_fts": 1, "vector_codes": 1,
    }
    assert fts_ids(store, "kettle") == {memory_id}
    assert fts_ids(store, "kitchen") == {memory_id}  # tags are indexed too
    assert_consistent(store)


def test_store_embeds_content_with_the_embedder(store):
    memory_id = store.store("  Kettle descaling schedule ")
    assert embedding_blob(store, memory_id) == hash_blob("Kettle descaling schedule")
    assert vector_blob(store, memory_id) == codes_of(store, embedding_blob(store, memory_id))


def test_store_uses_given_embedding_without_calling_embedder():
    embedder = CountingEmbedder()
    with new_store(embedder=embedder) as s:
        vector = unit_vector(384, 7)
        memory_id = s.store("x", embedding=vector)
        assert embedder.calls == []
        assert embedding_blob(s, memory_id) == float32(vector)
        assert vector_blob(s, memory_id) == codes_of(s, float32(vector))


def test_store_accepts_comma_separated_embedding_string(store):
    memory_id = store.store("x", embedding=",".join(["0.5"] * 384))
    assert embedding_blob(store, memory_id) == float32([0.5] * 384)


# --- store_many ---------------------------------------------------------------


def test_store_many_returns_ids_in_order(store):
    ids = store.store_many([{"content": f"memory number {n}", "importance": n / 10} for n in range(5)])
    assert len(ids) == len(set(ids)) == 5
    assert [store.get(i)["content"] for i in ids] == [f"memory number {n}" for n in range(5)]
    assert [store.get(i)["importance"] for i in ids] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert_consistent(store)


def test_store_many_honours_every_store_field(store):
    given = "0b0e5f6e-3c1d-4b8e-9a43-2a1f6f0d9c11"
    [memory_id] = store.store_many([{
        "content": "x", "id": given, "tags": ["t"], "type": "Habit", "confidence": 0.4,
        "timestamp": "2020-01-01T00:00:00Z", "metadata": {"k": "v"}, "context": "c"}])
    memory = store.get(memory_id)
    assert memory_id == given
    assert (memory["tags"], memory["type"], memory["confidence"], memory["timestamp"],
            memory["metadata"], memory["context"]) == (
        ["t"], "Habit", 0.4, "2020-01-01T00:00:00+00:00", {"k": "v"}, "c")


def test_store_many_embeds_in_batches():
    embedder = CountingEmbedder()
    with new_store(embedder=embedder) as s:
        items = [{"content": f"text {n}"} for n in range(5)]
        items.insert(2, {"content": "pre-embedded", "embedding": unit_vector()})
        ids = s.store_many(items, batch_size=2)
        assert [len(batch) for batch in embedder.calls] == [2, 2, 1]
        assert "pre-embedded" not in sum(embedder.calls, [])
        assert embedding_blob(s, ids[2]) == float32(unit_vector())
        assert embedding_blob(s, ids[0]) == hash_blob("text 0")


def test_store_many_empty_and_generator(store):
    assert store.store_many([]) == []
    ids = store.store_many({"content": c} for c in ("one", "two"))
    assert [store.get(i)["content"] for i in ids] == ["one", "two"]


def test_store_many_progress_bar(store, capsys):
    store.store_many([{"content": "a"}, {"content": "b"}], progress=True)
    err = capsys.readouterr().err
    assert "embedding" in err and "2/2" in err


@pytest.mark.parametrize(
    ("bad_item", "error", "message"),
    [
        ({"content": ""}, ValidationError, "'content' is required"),
        ({"content": "x", "importance": 2}, ValidationError, "'importance' must be between 0 and 1"),
        ({"content": "x", "type": "Banana"}, ValidationError, "Invalid memory type 'Banana'"),
        ({"content": "x", "embedding": [1.0, 2.0]}, ValidationError, "exactly 384 values"),
        ({"content": "x", "colour": "red"}, ValidationError, "Unknown memory field(s): colour"),
        ("just a string", ValidationError, "Memory at index 1 must be an object"),
        ({"content": "x", "id": "not-a-uuid"}, ValidationError, "id must be a valid UUID"),
    ],
)
def test_store_many_one_bad_item_stores_nothing(populated, bad_item, error, message):
    items = [{"content": "good one"}, bad_item, {"content": "good two"}]
    assert_rejected(populated, lambda: populated.store_many(items), error, message)


def test_store_many_duplicate_ids_in_one_batch_store_nothing(populated):
    given = "0b0e5f6e-3c1d-4b8e-9a43-2a1f6f0d9c11"
    items = [{"content": "a", "id": given}, {"content": "b", "id": given.upper()}]
    assert_rejected(populated, lambda: populated.store_many(items), ValidationError,
                    "Duplicate ids in one batch")


def test_store_many_existing_id_late_in_batch_stores_nothing(populated):
    # The clash is only found inside the transaction, after earlier items were
    # inserted (with FTS, embedding and vec0 rows): all of it must roll back.
    existing = populated.ids[0]
    items = [{"content": "first"}, {"content": "second"}, {"content": "clash", "id": existing}]
    assert_rejected(populated, lambda: populated.store_many(items), ValidationError,
                    f"A memory with id {existing} already exists")


@pytest.mark.parametrize("items", [None, 5, "abc", {"content": "x"}])
def test_store_many_rejects_non_lists(populated, items):
    assert_rejected(populated, lambda: populated.store_many(items), ValidationError,
                    "'items' must be a list of memory objects")


def test_store_many_bad_batch_size(populated):
    assert_rejected(populated, lambda: populated.store_many([{"content": "x"}], batch_size="big"),
                    ValidationError, "'batch_size' must be an integer")


# --- update -----------------------------------------------------------------


def test_update_content_re_embeds_and_reindexes(clocked, clock):
    memory_id = clocked.store("The kettle is blue. It is old.", tags=["home"])
    old_blob = embedding_blob(clocked, memory_id)
    clock.advance(hours=1)
    record = clocked.update(memory_id, content="The teapot is green. Brand new.")
    assert record == clocked.get(memory_id)
    assert record["content"] == "The teapot is green. Brand new."
    assert record["summary"] == "The teapot is green."
    assert record["updated_at"] == clock.iso
    assert record["timestamp"] == FIXED_ISO  # creation time is kept
    assert record["last_accessed"] == FIXED_ISO
    new_blob = embedding_blob(clocked, memory_id)
    assert new_blob != old_blob
    assert new_blob == hash_blob("The teapot is green. Brand new.")
    assert vector_blob(clocked, memory_id) == codes_of(clocked, new_blob)
    assert fts_ids(clocked, "teapot") == {memory_id}
    assert fts_ids(clocked, "kettle") == set()
    assert fts_ids(clocked, "home") == {memory_id}
    assert_consistent(clocked)


def test_update_without_content_change_does_not_re_embed(clock):
    embedder = CountingEmbedder()
    with new_store(embedder=embedder, clock=clock) as s:
        memory_id = s.store("The kettle is blue", tags=["home"])
        blob = embedding_blob(s, memory_id)
        calls = len(embedder.calls)
        clock.advance(minutes=5)
        record = s.update(memory_id, importance=0.9, tags=["kitchen"], metadata={"a": 1},
                          content="  The kettle is blue  ")  # same after strip
        assert len(embedder.calls) == calls
        assert embedding_blob(s, memory_id) == blob
        assert vector_blob(s, memory_id) == codes_of(s, blob)
        assert record["importance"] == 0.9
        assert record["updated_at"] == clock.iso
        assert_consistent(s)


def test_update_tags_recomputes_tag_rows_and_fts(store):
    memory_id = store.store("x", tags=["Project:Billing", "old"])
    record = store.update(memory_id, tags=["Project:Search/API", "new"])
    assert record["tags"] == ["Project:Search/API", "new"]
    assert record["tag_prefixes"] == ["project", "project:search", "project:search:api", "new"]
    assert tag_rows(store, memory_id) == (
        ["new", "project:search/api"], ["new", "project", "project:search", "project:search:api"])
    assert fts_ids(store, "new") == {memory_id}
    assert fts_ids(store, "old") == set()
    assert store.by_tag("old")["count"] == 0
    assert store.by_tag("NEW")["count"] == 1
    assert_consistent(store)


def test_update_tags_to_empty(store):
    memory_id = store.store("x", tags=["a:b"])
    assert store.update(memory_id, tags=[])["tags"] == []
    assert tag_rows(store, memory_id) == ([], [])
    assert_consistent(store)


def test_update_metadata_replaces_whole_object(store):
    memory_id = store.store("x", metadata={"a": 1, "b": 2})
    assert store.update(memory_id, metadata={"c": 3})["metadata"] == {"c": 3}


def test_update_keeps_fields_not_given(store):
    memory_id = store.store("We decided to ship", tags=["t"], importance=0.7,
                            metadata={"k": "v"}, context="work", t_invalid="2030-01-01T00:00:00Z")
    before = store.get(memory_id)
    after = store.update(memory_id, importance=0.2)
    assert {k: v for k, v in after.items() if k != "importance"} == {
        k: v for k, v in before.items() if k != "importance"}  # the fixed clock: same updated_at


def test_update_confidence_alone_keeps_type(store):
    memory_id = store.store("We decided to ship")
    record = store.update(memory_id, confidence=0.33)
    assert (record["type"], record["confidence"]) == ("Decision", 0.33)


def test_update_type(store):
    memory_id = store.store("We decided to ship")
    record = store.update(memory_id, type="insight")
    assert record["type"] == "Insight"


def test_update_content_regenerates_summary_unless_given(store):
    memory_id = store.store("One. Two.")
    assert store.update(memory_id, content="Three. Four.")["summary"] == "Three."
    assert store.update(memory_id, content="Five. Six.", summary="custom")["summary"] == "custom"
    # Content unchanged: a caller's summary stays.
    assert store.update(memory_id, importance=0.1)["summary"] == "custom"


def test_update_explicit_embedding(store):
    memory_id = store.store("x")
    store.update(memory_id, embedding=unit_vector(384, 3))
    assert embedding_blob(store, memory_id) == float32(unit_vector(384, 3))
    assert vector_blob(store, memory_id) == codes_of(store, float32(unit_vector(384, 3)))
    assert_consistent(store)


def test_update_explicit_updated_at(store):
    memory_id = store.store("x")
    record = store.update(memory_id, updated_at="2030-01-01T00:00:00Z")
    assert record["updated_at"] == "2030-01-01T00:00:00+00:00"


def test_update_accepts_uppercase_id(store):
    memory_id = store.store("x")
    assert store.update(memory_id.upper(), importance=0.3)["importance"] == 0.3


def test_update_with_no_fields_only_touches_updated_at(clocked, clock):
    memory_id = clocked.store("x")
    before = clocked.get(memory_id)
    clock.advance(days=1)
    after = clocked.update(memory_id)
    assert after == {**before, "updated_at": clock.iso}


# --- delete -----------------------------------------------------------------


def test_delete_removes_every_trace(populated):
    a, b, c = populated.ids
    before = counts(populated)
    pk = pk_of(populated, b)
    populated.delete(b)  # b has an incoming edge (a->b) and an outgoing one (b->c)
    with pytest.raises(NotFoundError):
        populated.get(b)
    after = counts(populated)
    assert after["memories"] == before["memories"] - 1
    assert after["memories_fts"] == before["memories_fts"] - 1
    assert after["vector_codes"] == before["vector_codes"] - 1
    assert after["memory_embeddings"] == before["memory_embeddings"] - 1
    assert after["edges"] == 0
    for table in ("memory_tags", "memory_tag_prefixes", "memory_embeddings", "vector_codes"):
        assert scalar(populated, f"SELECT count(*) FROM {table} WHERE pk = ?", (pk,)) == 0
    assert scalar(populated, "SELECT count(*) FROM edges WHERE src = ? OR dst = ?", (pk, pk)) == 0
    assert scalar(populated, "SELECT count(*) FROM memories_fts WHERE rowid = ?", (pk,)) == 0
    assert fts_ids(populated, "tea") == set()
    assert populated.by_tag("drinks")["count"] == 0
    assert populated.get(a)["content"].startswith("We decided")
    assert populated.get(c)
    assert_consistent(populated)


def test_delete_accepts_uppercase_id(store):
    memory_id = store.store("x")
    store.delete(memory_id.upper())
    assert counts(store)["memories"] == 0


def test_delete_twice_is_not_found(populated):
    populated.delete(populated.ids[0])
    assert_rejected(populated, lambda: populated.delete(populated.ids[0]),
                    NotFoundError, "Memory not found")


# --- associate --------------------------------------------------------------


def edges(store):
    return [
        (src, dst, type_, strength, updated_at, json.loads(props))
        for src, dst, type_, strength, updated_at, props in store.conn.execute(
            "SELECT s.id, d.id, e.type, e.strength, e.updated_at, e.properties FROM edges AS e "
            "JOIN memories AS s ON s.pk = e.src JOIN memories AS d ON d.pk = e.dst "
            "ORDER BY s.id, e.type, d.id")
    ]


def test_associate_defaults(store):
    a, b = store.store("a"), store.store("b")
    assert store.associate(a, b) == {
        "memory1_id": a, "memory2_id": b, "relation_type": "RELATES_TO", "strength": 0.5}
    assert edges(store) == [(a, b, "RELATES_TO", 0.5, FIXED_ISO, {})]


def test_associate_is_directed(store):
    a, b = store.store("a"), store.store("b")
    store.associate(b, a, "LEADS_TO", 0.3)
    assert edges(store) == [(b, a, "LEADS_TO", 0.3, FIXED_ISO, {})]


@pytest.mark.parametrize("given", ["leads_to", "Leads_To", "LEADS_TO"])
def test_associate_type_is_case_insensitive(store, given):
    a, b = store.store("a"), store.store("b")
    assert store.associate(a, b, given)["relation_type"] == "LEADS_TO"


@pytest.mark.parametrize("relation", AUTHORABLE_TYPES)
def test_associate_every_authorable_type(store, relation):
    a, b = store.store("a"), store.store("b")
    assert store.associate(a, b, relation, 1.0)["relation_type"] == relation
    assert edges(store)[0][2] == relation


def test_associate_returns_and_stores_properties(store):
    a, b = store.store("a"), store.store("b")
    result = store.associate(a, b, "PREFERS_OVER", 0.8, context="cli", reason="faster")
    assert result == {"memory1_id": a, "memory2_id": b, "relation_type": "PREFERS_OVER",
                      "strength": 0.8, "context": "cli", "reason": "faster"}
    assert edges(store)[0][5] == {"context": "cli", "reason": "faster"}


def test_associate_is_idempotent_upsert(clock):
    with new_store(clock=clock) as s:
        a, b = s.store("a"), s.store("b")
        s.associate(a, b, "RELATES_TO", 0.2, reason="first")
        clock.advance(minutes=1)
        s.associate(a, b, "relates_to", 0.9)
        assert edges(s) == [(a, b, "RELATES_TO", 0.9, clock.iso, {})]
        s.associate(a, b, "LEADS_TO")  # another type is another edge
        assert len(edges(s)) == 2


def test_associate_normalises_ids(store):
    a, b = store.store("a"), store.store("b")
    result = store.associate(a.upper(), b.upper())
    assert (result["memory1_id"], result["memory2_id"]) == (a, b)


@pytest.mark.parametrize("which", ["first", "second", "both"])
def test_associate_missing_memory_is_not_found(populated, which):
    a = populated.ids[0]
    first = MISSING_ID if which in ("first", "both") else a
    second = MISSING_ID.replace("0000-4000", "1111-4000") if which in ("second", "both") else a
    assert_rejected(populated, lambda: populated.associate(first, second), NotFoundError,
                    "One or both memories do not exist")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("A", "A"), {}, "Cannot associate a memory with itself"),
        (("A", "a-upper"), {}, "Cannot associate a memory with itself"),
        (("A", "not-a-uuid"), {}, "memory_id must be a valid UUID"),
        (("A", 42), {}, "memory_id must be a valid UUID"),
        (("A", None), {}, "'memory1_id' and 'memory2_id' are required"),
        (("A", "B"), {"type": "LIKES"}, "Relation type must be one of"),
        (("A", "B"), {"type": "SIMILAR_TO"}, "Relation type must be one of"),  # system type
        (("A", "B"), {"type": 5}, "Relation type must be one of"),
        (("A", "B"), {"strength": 2}, "'strength' must be between 0 and 1"),
        (("A", "B"), {"strength": -0.1}, "'strength' must be between 0 and 1"),
        (("A", "B"), {"strength": float("nan")}, "'strength' must be between 0 and 1"),
        (("A", "B"), {"strength": "strong"}, "'strength' must be a number"),
        (("A", "B"), {"strength": True}, "'strength' must be a number"),
        (("A", "B"), {"colour": "red"}, "Unknown relation property: colour"),
        (("A", "B"), {"reason": float("inf")}, "must be finite"),
    ],
)
def test_associate_rejects_bad_input(populated, args, kwargs, message):
    a, b, _ = populated.ids
    names = {"A": a, "B": b, "a-upper": a.upper()}
    resolved = [names.get(x, x) if isinstance(x, str) else x for x in args]
    assert_rejected(populated, lambda: populated.associate(*resolved, **kwargs),
                    ValidationError, message)


# --- supersede --------------------------------------------------------------


def test_supersede_with_new_content(clocked, clock):
    old = clocked.store("We use MySQL", tags=["db"], metadata={"source": "wiki"})
    clock.advance(days=2)
    result = clocked.supersede(old, "We moved to PostgreSQL", tags=["db"], importance=0.9)
    new = result["memory_id"]
    assert result == {"memory_id": new, "superseded_memory_id": old,
                      "relation_type": "INVALIDATED_BY", "association_created": True}
    new_memory = clocked.get(new)
    assert (new_memory["content"], new_memory["tags"], new_memory["importance"]) == (
        "We moved to PostgreSQL", ["db"], 0.9)
    assert new_memory["timestamp"] == clock.iso
    assert new_memory["t_invalid"] is None
    old_memory = clocked.get(old)
    assert old_memory["t_invalid"] == clock.iso
    assert old_memory["updated_at"] == clock.iso
    assert old_memory["content"] == "We use MySQL"
    assert old_memory["metadata"] == {"source": "wiki", "deprecated": True,
                                      "superseded_by": new, "supersede_relation": "INVALIDATED_BY"}
    assert edges(clocked) == [(old, new, "INVALIDATED_BY", 0.9, clock.iso, {})]
    assert embedding_blob(clocked, new) == hash_blob("We moved to PostgreSQL")
    assert_consistent(clocked)


def test_supersede_evolved_into_with_reason(store):
    old = store.store("v1 of the plan")
    result = store.supersede(old, "v2 of the plan", relation="evolved_into", reason="scope grew")
    assert result["relation_type"] == "EVOLVED_INTO"
    assert store.get(old)["metadata"]["supersede_reason"] == "scope grew"
    assert edges(store) == [(old, result["memory_id"], "EVOLVED_INTO", 0.9, FIXED_ISO,
                             {"reason": "scope grew"})]


def test_supersede_with_existing_id(store):
    old, new = store.store("old fact"), store.store("new fact")
    new_before = store.get(new)
    before = counts(store)
    result = store.supersede(old, new.upper())
    assert result["memory_id"] == new
    assert counts(store)["memories"] == before["memories"]
    assert store.get(new) == new_before
    assert store.get(old)["t_invalid"] == FIXED_ISO
    assert store.get(old)["metadata"]["superseded_by"] == new
    assert edges(store) == [(old, new, "INVALIDATED_BY", 0.9, FIXED_ISO, {})]
    assert_consistent(store)


def test_supersede_is_atomic(populated, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    # update_memory runs after the new memory was inserted with all its index rows.
    monkeypatch.setattr(localmem.storage.writes, "update_memory", boom)
    before = snapshot(populated)
    with pytest.raises(RuntimeError, match="disk on fire"):
        populated.supersede(populated.ids[0], "replacement fact", tags=["db"])
    assert snapshot(populated) == before


@pytest.mark.parametrize(
    ("new", "kwargs", "error", "message"),
    [
        ("MISSING", {}, NotFoundError, "Memory not found"),
        ("SELF", {}, ValidationError, "A memory cannot supersede itself"),
        ("new text", {"relation": "RELATES_TO"}, ValidationError, "'relation' must be one of"),
        ("new text", {"reason": 5}, ValidationError, "'reason' must be a string"),
        ("   ", {}, ValidationError, "'content' is required"),
        ("x" * 2001, {}, ValidationError, "Content exceeds maximum length of 2000"),
        (42, {}, ValidationError, "'content' must be a string"),
        ("new text", {"importance": 7}, ValidationError, "'importance' must be between 0 and 1"),
        ("new text", {"colour": "red"}, ValidationError, "Unknown memory field(s): colour"),
    ],
)
def test_supersede_rejects_bad_input(populated, new, kwargs, error, message):
    old = populated.ids[0]
    new = {"MISSING": MISSING_ID, "SELF": old}.get(new, new) if isinstance(new, str) else new
    assert_rejected(populated, lambda: populated.supersede(old, new, **kwargs), error, message)


def test_supersede_missing_old_is_not_found(populated):
    assert_rejected(populated, lambda: populated.supersede(MISSING_ID, "new text"),
                    NotFoundError, "Memory not found")


# --- bad input to store / update: error, message, nothing changed ---------------

DEEP_METADATA = functools.reduce(lambda inner, _: {"level": inner}, range(100), {})


@pytest.mark.parametrize(
    ("content", "fields", "message"),
    [
        # content
        ("", {}, "'content' is required"),
        ("   \n\t ", {}, "'content' is required"),
        (None, {}, "'content' is required"),
        ("a" * 2001, {}, "Content exceeds maximum length of 2000 characters (2001 provided)"),
        (123, {}, "'content' must be a string"),
        (["a list"], {}, "'content' must be a string"),
        (b"bytes", {}, "'content' must be a string"),
        ("nul\x00byte", {}, "'content' must not contain NUL characters"),
        ("lone \ud800 surrogate", {}, "'content' is not valid Unicode text"),
        # importance / confidence
        ("x", {"importance": 1.5}, "'importance' must be between 0 and 1"),
        ("x", {"importance": -0.01}, "'importance' must be between 0 and 1"),
        ("x", {"importance": float("nan")}, "'importance' must be between 0 and 1"),
        ("x", {"importance": float("inf")}, "'importance' must be between 0 and 1"),
        ("x", {"importance": "abc"}, "'importance' must be a number"),
        ("x", {"importance": True}, "'importance' must be a number"),
        ("x", {"importance": [0.5]}, "'importance' must be a number"),
        ("x", {"confidence": 3}, "'confidence' must be between 0 and 1"),
        ("x", {"confidence": "high"}, "'confidence' must be a number"),
        ("x", {"relevance_score": -1}, "'relevance_score' must be between 0 and 1"),
        # metadata
        ("x", {"metadata": "not a dict"}, "'metadata' must be an object"),
        ("x", {"metadata": ["a", "list"]}, "'metadata' must be an object"),
        ("x", {"metadata": {"n": float("nan")}}, "'metadata' numbers must be finite"),
        ("x", {"metadata": {"deep": [float("inf")]}}, "'metadata' numbers must be finite"),
        ("x", {"metadata": {1: "int key"}}, "'metadata' keys must be strings"),
        ("x", {"metadata": {"k": {("tuple",): 1}}}, "'metadata' keys must be strings"),
        ("x", {"metadata": DEEP_METADATA}, "'metadata' is nested deeper than 32 levels"),
        ("x", {"metadata": {"when": datetime(2024, 1, 1)}}, "'metadata' values must be JSON types"),
        ("x", {"metadata": {"s": {1, 2}}}, "'metadata' values must be JSON types"),
        ("x", {"metadata": {"bad": "nul\x00"}}, "'metadata' must not contain NUL characters"),
        ("x", {"metadata": {"\ud800": 1}}, "'metadata' is not valid Unicode text"),
        # tags
        ("x", {"tags": 5}, "'tags' must be a list of strings or a single string"),
        ("x", {"tags": {"a": 1}}, "'tags' must be a list of strings or a single string"),
        ("x", {"tags": ["ok", 5]}, "'tags' must be a list of strings or a single string"),
        ("x", {"tags": [None]}, "'tags' must be a list of strings or a single string"),
        ("x", {"tags": ["t" * 257]}, "Tag too long (257 characters)"),
        ("x", {"tags": ["a\x00b"]}, "Tags must not contain NUL characters"),
        ("x", {"tags": ["\ud800"]}, "Tags must be valid Unicode text"),
        # type
        ("x", {"type": "Banana"}, "Invalid memory type 'Banana'"),
        ("x", {"type": ""}, "Invalid memory type ''"),
        ("x", {"type": 5}, "'type' must be a string"),
        # timestamps
        ("x", {"timestamp": "not a date"}, "Invalid timestamp: Invalid ISO timestamp"),
        ("x", {"timestamp": "2024-13-45"}, "Invalid timestamp"),
        ("x", {"timestamp": ""}, "Invalid timestamp"),
        ("x", {"timestamp": True}, "Invalid timestamp"),
        ("x", {"timestamp": float("nan")}, "Invalid timestamp"),
        ("x", {"timestamp": 1e20}, "Invalid timestamp"),
        ("x", {"timestamp": ["2024-01-01"]}, "Invalid timestamp"),
        ("x", {"t_valid": "yesterday-ish"}, "Invalid t_valid"),
        ("x", {"t_invalid": "soon"}, "Invalid t_invalid"),
        ("x", {"updated_at": "later"}, "Invalid updated_at"),
        ("x", {"last_accessed": "never"}, "Invalid last_accessed"),
        # embeddings
        ("x", {"embedding": [0.1] * 383}, "Embedding must contain exactly 384 values"),
        ("x", {"embedding": [0.1] * 385}, "Embedding must contain exactly 384 values"),
        ("x", {"embedding": []}, "Embedding must contain exactly 384 values"),
        ("x", {"embedding": [float("nan")] + [0.1] * 383}, "Embedding values must be finite"),
        ("x", {"embedding": [float("inf")] + [0.1] * 383}, "Embedding values must be finite"),
        ("x", {"embedding": [1e300] * 384}, "Embedding values must be finite"),  # float32 overflow
        ("x", {"embedding": [0.0] * 384}, "Embedding must not be the zero vector"),
        ("x", {"embedding": [1e-50] * 384}, "Embedding must not be the zero vector"),  # underflow
        ("x", {"embedding": ["a"] * 384}, "Embedding must contain numeric values"),
        ("x", {"embedding": [True] * 384}, "Embedding must contain numeric values"),
        ("x", {"embedding": 5}, "Embedding must be a list of numbers"),
        ("x", {"embedding": "a,b"}, "Embedding must contain numeric values"),
        # ids
        ("x", {"id": "not-a-uuid"}, "id must be a valid UUID"),
        ("x", {"id": 12345}, "id must be a valid UUID"),
        ("x", {"id": ""}, "id must be a valid UUID"),
        # context / summary / unknown fields
        ("x", {"context": ""}, "'context' must be a non-empty string"),
        ("x", {"context": 5}, "'context' must be a non-empty string"),
        ("x", {"context": "c" * 129}, "'context' must be at most 128 characters"),
        ("x", {"archived": "false"}, "'archived' must be a boolean"),
        ("x", {"archived": 2}, "'archived' must be a boolean"),
        ("x", {"summary": 5}, "'summary' must be a string"),
        ("x", {"summary": "bad\x00"}, "'summary' must not contain NUL characters"),
        ("x", {"colour": "red"}, "Unknown memory field(s): colour"),
        ("x", {"colour": "red", "weight": 3}, "Unknown memory field(s): colour, weight"),
    ],
)
def test_store_rejects_bad_input(populated, content, fields, message):
    assert_rejected(populated, lambda: populated.store(content, **fields), ValidationError, message)


def test_store_rejects_duplicate_id(populated):
    existing = populated.ids[1]
    assert_rejected(populated, lambda: populated.store("again", id=existing.upper()),
                    ValidationError, f"A memory with id {existing} already exists")


def test_errors_carry_codes_and_envelope(store):
    with pytest.raises(ValidationError) as excinfo:
        store.store("")
    assert excinfo.value.code == 400
    assert excinfo.value.to_dict() == {"status": "error", "code": 400, "message": "'content' is required"}
    with pytest.raises(NotFoundError) as excinfo:
        store.get(MISSING_ID)
    assert excinfo.value.code == 404
    assert str(excinfo.value) == "Memory not found"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": ""}, "'content' is required"),
        ({"content": "a" * 2001}, "Content exceeds maximum length of 2000"),
        ({"content": "nul\x00"}, "'content' must not contain NUL characters"),
        ({"importance": "abc"}, "'importance' must be a number"),
        ({"importance": 1.01}, "'importance' must be between 0 and 1"),
        ({"metadata": 5}, "'metadata' must be an object"),
        ({"tags": 5}, "'tags' must be a list of strings or a single string"),
        ({"type": "Banana"}, "Invalid memory type 'Banana'"),
        ({"timestamp": "nope"}, "Invalid timestamp"),
        ({"embedding": [1.0]}, "Embedding must contain exactly 384 values"),
        ({"embedding": [0.0] * 384}, "Embedding must not be the zero vector"),
        ({"archived": "yes"}, "'archived' must be a boolean"),
        ({"id": MISSING_ID}, "Unknown memory field(s): id"),
        ({"colour": "red"}, "Unknown memory field(s): colour"),
    ],
)
def test_update_rejects_bad_input(populated, fields, message):
    target = populated.ids[0]
    assert_rejected(populated, lambda: populated.update(target, **fields), ValidationError, message)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.update(MISSING_ID, content="x"), NotFoundError, "Memory not found"),
        (lambda s: s.update("not-a-uuid", content="x"), ValidationError, "memory_id must be a valid UUID"),
        (lambda s: s.delete(MISSING_ID), NotFoundError, "Memory not found"),
        (lambda s: s.delete("not-a-uuid"), ValidationError, "memory_id must be a valid UUID"),
        (lambda s: s.delete(None), ValidationError, "memory_id must be a valid UUID"),
    ],
)
def test_update_and_delete_of_missing_or_malformed_ids(populated, call, error, message):
    assert_rejected(populated, lambda: call(populated), error, message)


def test_embedding_rejected_when_store_has_no_vector_index():
    with new_store(embedder="none") as s:
        memory_id = s.store("x")
        assert_rejected(s, lambda: s.store("y", embedding=unit_vector()), ValidationError,
                        "no vector index")
        assert_rejected(s, lambda: s.update(memory_id, embedding=unit_vector()), ValidationError,
                        "no vector index")


# --- consistency across a sequence of writes ---------------------------------


def test_indexes_agree_after_a_sequence_of_writes(clock):
    with new_store(clock=clock) as s:
        ids = s.store_many([{"content": f"alpha note {n}", "tags": [f"group:{n % 3}"]}
                            for n in range(9)])
        assert_consistent(s)
        s.update(ids[0], content="bravo replacement")
        s.update(ids[1], tags=["group:other", "extra"])
        s.update(ids[2], importance=0.9)
        s.associate(ids[3], ids[4])
        s.associate(ids[4], ids[5], "LEADS_TO")
        s.supersede(ids[5], "charlie successor")
        assert_consistent(s)
        s.delete(ids[4])
        s.delete(ids[6])
        s.store("delta newcomer", tags=["group:0"])
        assert_consistent(s)

        c = counts(s)
        assert c["memories"] == c["memories_fts"] == c["memory_embeddings"] == c["vector_codes"] == 9
        assert c["edges"] == 1  # 3->4 and 4->5 went with 4; 5->new remains
        assert fts_ids(s, "bravo") == {ids[0]}
        assert ids[0] not in fts_ids(s, "alpha")
        assert fts_ids(s, "alpha") == {ids[n] for n in (1, 2, 3, 5, 7, 8)}
        assert fts_ids(s, "extra") == {ids[1]}
        assert fts_ids(s, "charlie") == {s.get(ids[5])["metadata"]["superseded_by"]}
        assert len(fts_ids(s, "delta")) == 1


# --- a failure half-way through a write leaves nothing behind -----------------


def fail_on_call(n: int, original):
    """Wrap ``original`` so that its ``n``-th call raises (earlier calls run normally)."""
    calls = {"count": 0}

    def wrapper(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] >= n:
            raise RuntimeError("injected failure")
        return original(*args, **kwargs)

    return wrapper


def test_store_failure_after_memory_insert_rolls_back(populated, monkeypatch):
    # The full-text rows are written after the memory, tag and vector rows.
    monkeypatch.setattr(localmem.storage.writes, "_index_text", fail_on_call(1, localmem.storage.writes._index_text))
    before = snapshot(populated)
    with pytest.raises(RuntimeError, match="injected failure"):
        populated.store("half written", tags=["x:y"])
    assert snapshot(populated) == before


def test_store_failure_after_vector_insert_rolls_back(populated, monkeypatch):
    # Failing right after the batch's vectors reached the index.
    original = localmem.storage.writes._index_vectors

    def write_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("injected failure")

    monkeypatch.setattr(localmem.storage.writes, "_index_vectors", write_then_fail)
    before = snapshot(populated)
    with pytest.raises(RuntimeError):
        populated.store("half written")
    assert snapshot(populated) == before


def test_store_many_failure_on_second_item_rolls_back_the_first(populated, monkeypatch):
    # The second memory's vector fails to index, after the first one's went in.
    monkeypatch.setattr(localmem.storage.vector_index, "code_input",
                        fail_on_call(2, localmem.storage.vector_index.code_input))
    before = snapshot(populated)
    with pytest.raises(RuntimeError):
        populated.store_many([{"content": "first", "tags": ["a"]}, {"content": "second"}])
    assert snapshot(populated) == before


def test_embedder_failure_stores_nothing(populated, monkeypatch):
    def broken(texts):
        raise RuntimeError("model crashed")

    monkeypatch.setattr(populated.embedder, "embed", broken)
    monkeypatch.setattr(populated.embedder, "embed_with_tokens", broken)  # the path writes take
    before = snapshot(populated)
    with pytest.raises(RuntimeError, match="model crashed"):
        populated.store("x")
    with pytest.raises(RuntimeError, match="model crashed"):
        populated.store_many([{"content": "x"}, {"content": "y"}])
    with pytest.raises(RuntimeError, match="model crashed"):
        populated.update(populated.ids[0], content="changed")
    assert snapshot(populated) == before


def test_update_failure_rolls_back(populated, monkeypatch):
    original = localmem.storage.writes._set_embedding

    def write_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("injected failure")

    monkeypatch.setattr(localmem.storage.writes, "_set_embedding", write_then_fail)
    before = snapshot(populated)
    with pytest.raises(RuntimeError):
        populated.update(populated.ids[0], content="brand new words", tags=["fresh"])
    assert snapshot(populated) == before
    assert fts_ids(populated, "postgresql") == {populated.ids[0]}


def test_delete_failure_rolls_back(populated, monkeypatch):
    original = localmem.storage.writes.delete_memory

    def delete_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("injected failure")

    monkeypatch.setattr(localmem.storage.writes, "delete_memory", delete_then_fail)
    before = snapshot(populated)
    with pytest.raises(RuntimeError):
        populated.delete(populated.ids[1])
    assert snapshot(populated) == before
    assert_consistent(populated)


def test_update_with_none_leaves_fields_but_clears_t_invalid(memory_store):
    memory_id = memory_store.store("keep my fields", importance=0.8, context="work",
                                   timestamp="2025-01-01T00:00:00Z", t_invalid="2026-01-01T00:00:00Z")
    record = memory_store.update(memory_id, importance=None, context=None, timestamp=None,
                                 tags=None, t_invalid=None)
    assert record["importance"] == 0.8 and record["context"] == "work"
    assert record["timestamp"] == "2025-01-01T00:00:00+00:00"
    assert record["t_invalid"] is None


def test_store_many_error_names_the_item(memory_store):
    import pytest as _pytest
    from localmem import ValidationError as _VE
    with _pytest.raises(_VE, match="Memory at index 1: 'importance' must be between 0 and 1"):
        memory_store.store_many([{"content": "fine"}, {"content": "bad", "importance": 7}])
    assert memory_store.health()["memory_count"] == 0
