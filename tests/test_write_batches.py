"""The batched write path writes what the per-row path wrote.

``store_many`` makes the full-text rows of memories outside any thread in
Python, and the query for the others looks their keys up instead of scanning
every memory. These tests hold it to the reference: the full-text index the
old query made, byte for byte, and the same memories stored one ``store()``
at a time.
"""

from __future__ import annotations

import uuid
import warnings

import pytest

from localmem import ValidationError
from localmem.storage import writes
from localmem.storage.threads import _params, affected_rows
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
    """Turns of two sessions (a gap of days cuts some threads into two segments), notes outside any
    thread between them, in four contexts, tags in every form the reader accepts, repeated
    and not, metadata with indexed terms, non-ASCII text."""
    items = []
    for index in range(40):
        item: dict = {"id": str(uuid.UUID(int=index + 1, version=4)), "content": f"note {index} über die Pläne",
                      "timestamp": f"2024-03-{1 + index // 24 + 3 * (index >= 30):02d}T{index % 24:02d}:00:00+00:00"}
        if index % 3 == 0:
            item["metadata"] = {"session": "alpha" if index < 20 else "beta", "speaker": f"p{index % 2}"}
        elif index % 3 == 1:
            item["tags"] = ["Project:Foo/Bar", "#home", "x y"] if index % 2 else "thread:gamma, solo"
        else:
            item["tags"] = ["Ünïcode", "project:foo"]
            item["metadata"] = {"ticket": f"ABC-{index}", "nested": {"k": [1, "two"]}}
        if index % 5 == 0:
            item["type"] = "Decision"
        if index % 4:  # three contexts, interleaved: the old query wrote rows in context order
            item["context"] = ("work", "home", "Zürich")[index % 4 - 1]
        items.append(item)
    return items


def dump(store) -> dict[str, list]:
    return {name: list(store.conn.execute(query)) for name, query in COMPARED.items()}


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# thread_text_rows.sql as it was before the batched path (c92907f): every new memory's row,
# and its thread neighbours', from one query, inserted in the order the query gave them.
BEFORE = """
WITH targets AS (
    SELECT pk, thread FROM memories
    WHERE :pks IS NULL OR pk IN (SELECT value FROM json_each(:pks))
),
{{thread_segments}},
context AS (
    SELECT s.pk,
           lag(s.content, 1, '') OVER w AS prev1, lead(s.content, 1, '') OVER w AS next1,
           lag(s.content, 2, '') OVER w AS prev2, lead(s.content, 2, '') OVER w AS next2,
           lag(s.content, 3, '') OVER w AS prev3, lead(s.content, 3, '') OVER w AS next3
    FROM segmented AS s
    WINDOW w AS (PARTITION BY s.thread, s.segment ORDER BY s.timestamp, s.pk)
)
SELECT m.pk, m.content,
       CASE WHEN json_valid(m.tags) THEN
           coalesce((SELECT group_concat(j.value, ' ') FROM json_each(m.tags) AS j), '')
       ELSE '' END,
       coalesce(c.prev1, ''), coalesce(c.next1, ''), coalesce(c.prev2, ''),
       coalesce(c.next2, ''), coalesce(c.prev3, ''), coalesce(c.next3, '')
FROM targets AS t
JOIN memories AS m ON m.pk = t.pk
LEFT JOIN context AS c ON c.pk = m.pk;
"""


def query_made_text(conn, sql, pks, threaded, stamps, unthreaded_text):
    """The full-text rows as the per-row path made them, with the query as it was."""
    new = set(pks)
    neighbours = affected_rows(conn, sql, threaded, stamps)
    for pk in sorted(neighbours - new):
        conn.execute(sql["fts_delete"], {"pk": pk})
    targets = sorted(new | neighbours)
    params = _params(targets, stamps, reach=2)
    conn.executemany(sql["fts_delete"], [{"pk": pk} for pk in targets if pk not in new])
    query = BEFORE.replace("{{thread_segments}}", sql.fragment("thread_segments"))
    conn.executemany(sql["fts_insert"], list(conn.execute(query, params)))


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
    # Turns 0 and 12 (keys 1 and 13) are one thread's (default context, session alpha) and
    # carry each other's text; turns 24 and 36 (session beta) are three days apart, so two segments.
    assert [r[0] for r in made.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH '{prev1 next1}: (12 OR 0)'")] == [1, 13]
    assert list(made.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH '{prev1 next1}: (24 OR 36)'")) == []
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


def test_each_memory_of_a_batch_is_warned_for_its_own_tags():
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
