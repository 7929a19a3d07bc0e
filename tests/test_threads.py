"""Thread-aware memory: neighbours' text in the index, kept right under every write."""

from __future__ import annotations

from localmem.storage.threads import thread_key

T0 = "2025-02-01T10:00:00+00:00"


def fts_context(store, memory_id):
    """The (prev1, next1, prev2, next2, prev3, next3) columns of a memory's full-text row,
    read back through column-filtered MATCH queries on a unique word of each neighbour."""
    pk = store.conn.execute("SELECT pk FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    words = {row[0]: row[1] for row in store.conn.execute("SELECT pk, content FROM memories")}
    found = {}
    for column in ("prev1", "next1", "prev2", "next2", "prev3", "next3"):
        hits = [other for other, content in words.items()
                if other != pk and store.conn.execute(
                    "SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? AND rowid = ?",
                    (f'{column}: "{content.split()[0]}"', pk)).fetchone()]
        found[column] = hits
    by_pk = {row[0]: row[1] for row in store.conn.execute("SELECT pk, id FROM memories")}
    return {column: [by_pk[h] for h in hits] for column, hits in found.items()}


def turn(store, word, *, session="s1", timestamp=T0, **fields):
    return store.store(f"{word} said something", metadata={"session": session}, timestamp=timestamp, **fields)


def test_thread_key_sources():
    assert thread_key("default", {"thread": "abc"}, []) == "default\x1fabc"
    assert thread_key("default", {"session": 3}, []) == "default\x1f3"
    assert thread_key("work", {}, ["Session:42"]) == "work\x1f42"
    assert thread_key("default", {}, ["thread:x", "session:y"]) == "default\x1fx"
    assert thread_key("default", {"session": True}, []) is None
    assert thread_key("default", {}, ["project:alpha"]) is None


def test_neighbours_are_indexed_in_order(memory_store):
    s = memory_store
    a, b, c, d, e = (turn(s, w) for w in ("alpha", "bravo", "charlie", "delta", "echo"))
    ctx = fts_context(s, c)
    assert ctx["prev1"] == [b] and ctx["next1"] == [d]
    assert ctx["prev2"] == [a] and ctx["next2"] == [e]
    assert ctx["prev3"] == [] and ctx["next3"] == []


def test_out_of_order_insert_rewires_the_context(memory_store):
    s = memory_store
    first = turn(s, "alpha", timestamp="2025-02-01T10:00:00Z")
    last = turn(s, "charlie", timestamp="2025-02-01T10:02:00Z")
    middle = turn(s, "bravo", timestamp="2025-02-01T10:01:00Z")  # stored last, belongs between
    assert fts_context(s, first)["next1"] == [middle]
    assert fts_context(s, last)["prev1"] == [middle]
    assert fts_context(s, middle)["prev1"] == [first] and fts_context(s, middle)["next1"] == [last]


def test_delete_closes_the_gap(memory_store):
    s = memory_store
    a, b, c = (turn(s, w) for w in ("alpha", "bravo", "charlie"))
    s.delete(b)
    assert fts_context(s, a)["next1"] == [c]
    assert fts_context(s, c)["prev1"] == [a]


def test_update_of_content_and_thread_moves_the_text(memory_store):
    s = memory_store
    a, b, c = (turn(s, w) for w in ("alpha", "bravo", "charlie"))
    s.update(b, content="zulu replaced this")
    assert fts_context(s, a)["next1"] == [b]
    assert s.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'next1: zulu'"
                          ).fetchone()[0] == 1
    assert s.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'bravo'"
                          ).fetchone()[0] == 0
    s.update(b, metadata={"session": "other"})
    assert fts_context(s, a)["next1"] == [c]
    assert fts_context(s, b) == {k: [] for k in ("prev1", "next1", "prev2", "next2", "prev3", "next3")}


def test_threads_with_the_same_id_far_apart_do_not_mix(memory_store):
    s = memory_store
    early = turn(s, "alpha", timestamp="2024-01-01T10:00:00Z")
    late = turn(s, "bravo", timestamp="2024-06-01T10:00:00Z")
    assert fts_context(s, early)["next1"] == [] and fts_context(s, late)["prev1"] == []


def test_memories_without_a_thread_have_no_context(memory_store):
    s = memory_store
    a = s.store("alpha plain", timestamp=T0)
    s.store("bravo plain", timestamp=T0)
    assert fts_context(s, a) == {k: [] for k in ("prev1", "next1", "prev2", "next2", "prev3", "next3")}
    assert s.health()["indexes_agree"] is True


def test_contexts_keep_threads_apart(memory_store):
    s = memory_store
    a = turn(s, "alpha", context="one")
    turn(s, "bravo", context="two")
    assert fts_context(s, a)["next1"] == []


def test_reply_is_found_by_the_words_of_the_question_it_answers(memory_store_factory):
    """The ranking behaviour the LoCoMo gains rest on: an answer turn that shares
    no word with the query ranks first because the turn before it asked it."""
    store = memory_store_factory(embedder="none")
    chat = [
        "Mel: How was the weekend?",
        "Caroline: Pretty quiet, I mostly read.",
        "Mel: Did you ever decide which adoption agency to go with?",
        "Caroline: Yes! We signed with Bright Futures last Tuesday.",
        "Mel: That is wonderful news.",
    ] + [f"Mel: filler line {i} about gardening" for i in range(6)]
    ids = store.store_many([{"content": text, "metadata": {"session": 1}, "timestamp": T0}
                            for text in chat])
    flat = memory_store_factory(embedder="none")
    flat.store_many([{"content": text, "timestamp": T0} for text in chat])

    query = "Which adoption agency was chosen?"
    response = store.recall(query, limit=3, adaptive_floor=False)
    top = [r["id"] for r in response["results"]]
    # The question turn itself first, then the reply: it shares no word with the
    # query but the turn before it does (prev1 weighs more than next1).
    assert top[:2] == [ids[2], ids[3]]
    reply = response["results"][1]
    assert reply["match_type"] == "keyword" and reply["score_components"]["keyword"] > 0

    flat_contents = [r["memory"]["content"] for r in flat.recall(query, limit=3, adaptive_floor=False)["results"]]
    assert chat[3] not in flat_contents


def test_migration_to_threads_backfills_context(tmp_path, memory_store_factory):
    from localmem.storage.database import connect
    from localmem.storage.migrations import migrate
    from localmem.storage.statements import Statements

    path = tmp_path / "v2.db"
    conn = connect(path)
    migrate(conn, Statements(), target=2)
    with conn:
        for n, word in enumerate(("alpha", "bravo")):
            conn.execute(
                "INSERT INTO memories (id, content, type, confidence, importance, tags, timestamp, "
                "updated_at, last_accessed, metadata) VALUES (?, ?, 'Context', 0.5, 0.5, '[]', ?, ?, ?, ?)",
                (f"00000000-0000-4000-8000-00000000000{n}", f"{word} said something",
                 T0, T0, T0, '{"session": 7}'))
    conn.close()
    store = memory_store_factory(str(path))
    a, b = "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001"
    assert fts_context(store, a)["next1"] == [b]
    assert store.health()["indexes_agree"] is True


def test_thread_context_survives_reopen(tmp_path, memory_store_factory):
    path = str(tmp_path / "t.db")
    store = memory_store_factory(path)
    a, b = turn(store, "alpha"), turn(store, "bravo")
    store.close()
    reopened = memory_store_factory(path)
    assert fts_context(reopened, a)["next1"] == [b]
