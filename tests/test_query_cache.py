"""The backend keeps the last query encodings: a text asked again (a hook's two scopes, a warm
process asked the same prompt) is not embedded again, and the answer is the same."""

from __future__ import annotations

import pytest


def test_a_query_asked_again_is_embedded_once_and_answered_alike(memory_store, monkeypatch) -> None:
    memory_store.store_many([{"content": f"note {i} about the orchid deployment and its rollout"}
                             for i in range(30)])
    backend = memory_store.backend
    calls: list[str] = []
    original = backend._embed_query

    def counting(text, delta, run):
        calls.append(text)
        return original(text, delta, run)

    monkeypatch.setattr(backend, "_embed_query", counting)
    first = memory_store.recall("orchid rollout", limit=10)
    again = memory_store.recall("orchid rollout", limit=10, tags=["nothing-has-this"])
    third = memory_store.recall("orchid rollout", limit=10)
    assert calls == ["orchid rollout"]
    assert [r["id"] for r in third["results"]] == [r["id"] for r in first["results"]]
    assert [r["final_score"] for r in third["results"]] == pytest.approx([r["final_score"] for r in first["results"]])
    assert again["results"] == []
    memory_store.recall("another question", limit=3)
    assert calls == ["orchid rollout", "another question"]
    encoding = backend.embed_query("orchid rollout", None)
    if encoding is not None and hasattr(encoding.tokens, "flags"):
        assert not encoding.tokens.flags.writeable  # shared between requests: never changed in place


def test_the_cache_is_bounded(memory_store) -> None:
    from localmem.storage.backend import QUERY_CACHE_SIZE

    memory_store.store("one memory to search")
    for index in range(QUERY_CACHE_SIZE + 10):
        memory_store.recall(f"question number {index}", limit=1)
    assert len(memory_store.backend._query_cache) == QUERY_CACHE_SIZE
