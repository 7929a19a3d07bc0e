"""The batched write path writes what the per-row path wrote.

``store_many`` makes the full-text rows of memories outside any thread in
Python, works each row's thread key out once, and reads each distinct tag
value once per batch. These tests hold it to the reference: the full-text
rows thread_text_rows.sql makes for every memory, and the same memories
stored one ``store()`` at a time.
"""

from __future__ import annotations

import uuid
import warnings

import pytest

from localmem import ValidationError
from localmem.storage import writes
from localmem.storage.threads import affected_rows, write_text_rows
from tests.store_helpers import Clock, new_store

# Rows of every table a write fills whose bytes do not depend on how the writes were grouped
# into transactions (the vector codes follow the calibration, which is measured as the store
# grows, and the full-text index's segments follow the transactions).
COMPARED = {
    "memories": "SELECT * FROM memories ORDER BY pk",
    "memory_tags": "SELECT * FROM memory_tags ORDER BY pk, tag",
    "memory_tag_prefixes": "SELECT * FROM memory_tag_prefixes ORDER BY pk, prefix",
    "memory_metadata_terms": "SELECT * FROM memory_metadata_terms ORDER BY pk, term",
    "memory_dedup_keys": "SELECT * FROM memory_dedup_keys ORDER BY pk",
    "memory_embeddings": "SELECT * FROM memory_embeddings ORDER BY pk",
    "memory_changes": "SELECT * FROM memory_changes ORDER BY pk",
    "token_codes": "SELECT * FROM token_codes ORDER BY pk",
    "sync_clock": "SELECT * FROM sync_clock",
}


def varied_items() -> list[dict]:
    """Turns of two sessions (a gap of days cuts one into two segments), notes outside any
    thread between them, tags in every form the reader accepts, repeated and not, metadata
    with indexed terms, non-ASCII text."""
    items = []
    for index in range(40):
        item: dict = {"id": str(uuid.UUID(int=index + 1, version=4)), "content": f"note {index} über die Pläne",
                      "timestamp": f"2024-03-{1 + index // 4:02d}T{index % 24:02d}:00:00+00:00"}
        if index % 3 == 0:
            item["metadata"] = {"session": "alpha" if index < 20 else "beta", "speaker": f"p{index % 2}"}
        elif index % 3 == 1:
            item["tags"] = ["Project:Foo/Bar", "#home", "x y"] if index % 2 else "thread:gamma, solo"
        else:
            item["tags"] = ["Ünïcode", "project:foo"]
            item["metadata"] = {"ticket": f"ABC-{index}", "nested": {"k": [1, "two"]}}
        if index % 5 == 0:
            item["type"] = "Decision"
        items.append(item)
    return items


def dump(store) -> dict[str, list]:
    return {name: list(store.conn.execute(query)) for name, query in COMPARED.items()}


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def query_made_text(conn, sql, pks, threaded, stamps, unthreaded_text):
    """The full-text rows as the per-row path made them: every new memory's row (and its
    thread neighbours') from thread_text_rows.sql."""
    new = set(pks)
    neighbours = affected_rows(conn, sql, threaded, stamps)
    for pk in sorted(neighbours - new):
        conn.execute(sql["fts_delete"], {"pk": pk})
    write_text_rows(conn, sql, new | neighbours, stamps, fresh=new)


def full_text_bytes(store) -> dict[str, list]:
    """The full-text index's own tables (it keeps no copy of the text to compare)."""
    names = [r[0] for r in store.conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'memories_fts_%' ORDER BY name")]
    return {name: list(store.conn.execute(f'SELECT * FROM "{name}" ORDER BY 1')) for name in names}


@pytest.mark.parametrize("batches", [[40], [25, 15], [1] * 10 + [30], [3, 37]])
def test_batch_full_text_rows_are_what_the_query_makes(quiet, monkeypatch, batches):
    items = varied_items()
    made, reference = new_store(clock=Clock()), new_store(clock=Clock())
    start = 0
    for size in batches:
        made.store_many(items[start:start + size])
        start += size
    monkeypatch.setattr(writes, "_index_text", query_made_text)
    start = 0
    for size in batches:
        reference.store_many(items[start:start + size])
        start += size
    assert full_text_bytes(made)["memories_fts_data"], "the index has rows"
    assert full_text_bytes(made) == full_text_bytes(reference)
    assert dump(made) == dump(reference)
    # Turn 15 (key 16) is the next turn of turn 12 (key 13) only: turn 18 is a day and
    # three hours later, in a new segment.
    assert list(made.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH '{prev1 next1}: 15'")) == [(13,)]
    assert [r[0] for r in made.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH '{tags}: home'")] == [2, 8, 14, 20, 26, 32, 38]


def test_batch_writes_the_rows_single_writes_write(quiet):
    batched, single = new_store(clock=Clock()), new_store(clock=Clock())
    items = varied_items()
    batched.store_many(items[:25])
    batched.store_many(items[25:])  # a second batch whose turns extend the first one's threads
    for item in items:
        single.store(**item)
    assert dump(batched) == dump(single)
    hits = batched.recall(query="Pläne", limit=50)["results"]
    assert len(hits) == 40


def test_a_repeated_tag_value_is_read_once_but_warned_for_each_memory():
    store = new_store()
    items = [{"content": f"m{i}", "tags": "work;urgent"} for i in range(3)]
    with pytest.warns(UserWarning) as caught:
        ids = store.store_many(items)
    messages = [str(w.message) for w in caught]
    assert [m.split(":")[0] for m in messages] == [f"Memory at index {i}" for i in range(3)]
    records = [store.get(i) for i in ids]
    assert [r["tags"] for r in records] == [["work", "urgent"]] * 3
    assert store.by_tag(["urgent"], limit=10)["count"] == 3


def test_a_bad_tag_after_a_good_copy_of_its_value_names_its_index():
    store = new_store()
    items = [{"content": "a", "tags": ["ok"]}, {"content": "b", "tags": ["ok"]}, {"content": "c", "tags": ["ok", 5]}]
    with pytest.raises(ValidationError, match="Memory at index 2"):
        store.store_many(items)
    assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
