"""Very common query terms: left out of the keyword score, and the answer says so."""

from __future__ import annotations

from localmem.recall.keywords import COMMON_TERM_ROWS


def test_a_term_in_too_many_memories_is_left_out_and_reported(memory_store_factory):
    store = memory_store_factory(embedder="hash:16")
    store.store_many([{"content": f"alpha note {i}"} for i in range(COMMON_TERM_ROWS + 50)])
    rare = store.store("alpha zebra crossing")
    response = store.recall("alpha zebra", limit=3)
    assert response["keyword_search"]["left_out"] == ["alpha"]
    assert "2,000" in response["keyword_search"]["reason"]
    assert any("'alpha'" in w for w in response["warnings"])
    assert response["results"][0]["id"] == rare
    # Alone, the common term is still searched (the rarest of all-common terms is kept).
    alone = store.recall("alpha", limit=3)
    assert "keyword_search" not in alone and alone["count"] == 3


def test_no_note_when_every_term_is_searched(memory_store_factory):
    store = memory_store_factory(embedder="hash:16")
    store.store_many([{"content": f"beta note {i}"} for i in range(20)])
    assert "keyword_search" not in store.recall("beta note", limit=3)


def test_all_common_terms_are_still_searched_when_there_is_no_vector_search(memory_store_factory, monkeypatch):
    import localmem.recall.keywords as keywords

    monkeypatch.setattr(keywords, "COMMON_TERM_ROWS", 50)
    monkeypatch.setattr(keywords, "FALLBACK_TERM_ROWS", 100)
    items = [{"content": f"gamma entry {i}"} for i in range(150)]
    with_vectors = memory_store_factory(embedder="hash:16")
    with_vectors.store_many(items)
    answer = with_vectors.recall("gamma", limit=3)
    assert answer["keyword_search"]["left_out"] == ["gamma"]  # the vector search answers instead
    keyword_only = memory_store_factory(embedder="none")
    keyword_only.store_many(items)
    answer = keyword_only.recall("gamma", limit=3)
    assert answer["count"] == 3 and "keyword_search" not in answer
