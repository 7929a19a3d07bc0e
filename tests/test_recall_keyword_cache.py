"""Recall's keyword leg: what it keeps per store generation, and the scores of given memories."""

from __future__ import annotations

import pytest

import localmem.recall.channels as channels
from localmem.recall.channels import keyword_candidates, make_scope
from localmem.recall.keywords import KeywordScorer
from localmem.recall.params import parse_recall_params
from localmem.storage.database import read_transaction
from localmem.storage.records import to_record


@pytest.fixture
def always_cached(monkeypatch):
    """Keep every query's keyword hits (not only those of common terms)."""
    monkeypatch.setattr(channels, "CACHED_HITS_POSTINGS", 0)


def keyword_hits(store, query):
    """The keyword channel's candidates, as recall asks for them (in one read snapshot)."""
    backend = store._backend
    params = parse_recall_params({"query": query}, backend.config, backend.dimensions, backend.now())
    with read_transaction(store.conn):
        return keyword_candidates(backend, make_scope(params, backend.config.excluded_types),
                                  KeywordScorer(backend, query), None, 20)


def test_own_write_is_seen_by_the_next_recall(memory_store, always_cached):
    memory_store.store("The zebra crossing outside the office was repainted.")
    assert len(keyword_hits(memory_store, "zebra")) == 1
    new_id = memory_store.store("A zebra at the zoo, and another zebra beside it.")
    found = keyword_hits(memory_store, "zebra")
    assert new_id in {r["id"] for r in found}
    assert len(found) == 2


def test_update_and_delete_are_seen(memory_store, always_cached):
    first = memory_store.store("Okapi sightings are rare.")
    assert [r["id"] for r in keyword_hits(memory_store, "okapi")] == [first]
    memory_store.update(first, content="Giraffe sightings are common.")
    assert keyword_hits(memory_store, "okapi") == []
    second = memory_store.store("An okapi was seen at dawn.")
    assert [r["id"] for r in keyword_hits(memory_store, "okapi")] == [second]
    memory_store.delete(second)
    assert keyword_hits(memory_store, "okapi") == []


def test_another_connections_commit_is_seen(memory_store_factory, tmp_path, always_cached):
    path = str(tmp_path / "shared.db")
    reader = memory_store_factory(path)
    writer = memory_store_factory(path)
    writer.store("The quokka smiled for the camera.")
    assert len(keyword_hits(reader, "quokka")) == 1
    writer.store("A second quokka joined the first quokka.")
    assert len(keyword_hits(reader, "quokka")) == 2


def test_document_frequencies_follow_writes(memory_store):
    memory_store.store("Ferrets are curious.")
    backend = memory_store._backend
    assert KeywordScorer(backend, "ferrets").searched == [("ferrets", 1)]
    memory_store.store("Ferrets sleep a lot.")
    assert KeywordScorer(backend, "ferrets").searched == [("ferrets", 2)]


def test_nothing_is_kept_inside_a_write_transaction(memory_store):
    backend = memory_store._backend
    assert backend.content_cache() is not None
    with memory_store.conn:
        memory_store.conn.execute("UPDATE memories SET importance = importance")
        assert backend.content_cache() is None


def test_scores_of_given_memories_equal_the_keyword_channels(memory_store):
    """The keyword score of a memory is the same whether the keyword channel found it or not."""
    texts = ["Lisbon trip planned for May with the whole family.",
             "The Lisbon office moves in May.",
             "Family dinner on Sunday.",
             "Nothing about travel here."]
    for text in texts:
        memory_store.store(text)
    backend = memory_store._backend
    params = parse_recall_params({"query": "Lisbon family May"}, backend.config, backend.dimensions,
                                 backend.now())
    scope = make_scope(params, backend.config.excluded_types)
    scorer = KeywordScorer(backend, "Lisbon family May")
    found = keyword_candidates(backend, scope, scorer, None, 10)
    assert len(found) == 3
    channel = scorer.scores(found)
    for candidate in found:  # the same memories as if another channel had found them
        del candidate["_bm25"]
    given = KeywordScorer(backend, "Lisbon family May").scores(found)
    assert given == pytest.approx(channel, rel=1e-12)
    assert all(score > 0 for score in given.values())


def test_records_do_not_share_their_tag_lists():
    row = {"id": "x", "content": "c", "summary": None, "type": "Memory", "confidence": 0.9,
           "importance": 0.5, "tags": '["Project:Alpha/Core", "misc"]', "timestamp": "t",
           "updated_at": "t", "last_accessed": "t", "t_valid": None, "t_invalid": None, "archived": 0,
           "metadata": "{}", "context": "", "relevance_score": None}
    first = to_record(row)
    assert first["tag_prefixes"] == ["project", "project:alpha", "project:alpha:core", "misc"]
    first["tags"].append("changed")
    first["tag_prefixes"].clear()
    second = to_record(row)
    assert second["tags"] == ["Project:Alpha/Core", "misc"]
    assert second["tag_prefixes"] == ["project", "project:alpha", "project:alpha:core", "misc"]


def test_a_damaged_tag_column_is_still_read():
    row = {"id": "x", "content": "c", "summary": None, "type": "Memory", "confidence": 0.9,
           "importance": 0.5, "tags": '{"not": "a list"}', "timestamp": "t", "updated_at": "t",
           "last_accessed": "t", "t_valid": None, "t_invalid": None, "archived": 0,
           "metadata": "{}", "context": "", "relevance_score": None}
    assert to_record(row)["tags"] == {"not": "a list"}


def test_a_new_snapshot_sees_another_connections_commit_first_thing(memory_store_factory, tmp_path):
    """The generation is read before anything else in a snapshot, and still sees the other commit."""
    path = str(tmp_path / "shared.db")
    reader = memory_store_factory(path)
    writer = memory_store_factory(path)
    reader.store("Something to read.")
    backend = reader._backend
    with read_transaction(reader.conn):
        backend.content_cache()["probe"] = True
    with read_transaction(reader.conn):
        assert backend.content_cache().get("probe")  # nothing changed: still kept
    writer.store("Written elsewhere.")
    with read_transaction(reader.conn):
        assert "probe" not in backend.content_cache()


def test_listed_memories_get_their_scores_from_the_scoped_pass(memory_store):
    """Within a tag scope, the other channels' finds are scored in the hits' own pass,
    in scope or not, matching or not, exactly as the scores statement scores them."""
    texts = [("Lisbon trip planned for May with the whole family.", ["trip"]),
             ("The Lisbon office moves in May.", ["trip"]),
             ("Nothing about travel here.", ["trip"]),
             ("Lisbon again, in another scope.", ["work"])]
    ids = [memory_store.store(text, tags=tags) for text, tags in texts]
    backend = memory_store._backend
    pks = dict(memory_store.conn.execute("SELECT id, pk FROM memories"))
    params = parse_recall_params({"query": "Lisbon family May", "tags": ["trip"]}, backend.config,
                                 backend.dimensions, backend.now())
    scope = make_scope(params, backend.config.excluded_types)
    scorer = KeywordScorer(backend, "Lisbon family May")
    with read_transaction(memory_store.conn):
        found = keyword_candidates(backend, scope, scorer, None, 1, [pks[i] for i in ids])
        assert [c["id"] for c in found] == [ids[0]]  # k = 1: only the best hit in scope
        others = [{"id": i, "_pk": pks[i], "match_type": "vector"} for i in ids]
        learnt = scorer.scores(others)
        computed = KeywordScorer(backend, "Lisbon family May").scores(others)
    assert learnt == pytest.approx(computed, rel=1e-12)
    assert set(learnt) == {ids[0], ids[1], ids[3]}  # the out-of-scope match too; no match: absent


def test_recall_s_own_last_accessed_writes_keep_the_cache(memory_store_factory):
    from localmem import Config

    store = memory_store_factory(config=Config(track_access=True))
    first = store.store("the kettle is descaled monthly")
    store.recall("kettle", limit=1)
    store.backend.content_cache()["sentinel"] = 1
    answer = store.recall("kettle", limit=1)  # writes last_accessed
    assert answer["results"][0]["id"] == first
    assert store.get(first)["last_accessed"] is not None
    assert store.backend.content_cache().get("sentinel") == 1
    store.delete(first)  # a real change empties it
    assert "sentinel" not in store.backend.content_cache()
