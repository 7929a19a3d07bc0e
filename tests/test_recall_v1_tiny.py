"""Kagura recall on a tiny store: the top k comes back however weak, and ``confidence`` says how
weak (issue 13, item 11)."""

from __future__ import annotations

import pytest

from localmem import MemoryStore

# With the hash embedder these queries share no word with the memory: cosine 0 or below.
UNRELATED = ["go", "kiwi", "zzz"]
TOKEN = "tiny-store-token-0123456789"


@pytest.fixture
def tiny(memory_store_factory):
    store = memory_store_factory(embedder="hash")
    memory_id = store.store("Postgres 16 runs the atlas database")
    return store, memory_id


@pytest.mark.parametrize("query", UNRELATED)
@pytest.mark.parametrize("mode", [None, "semantic"])
def test_one_memory_and_an_unrelated_query_still_answers(tiny, query, mode):
    store, memory_id = tiny
    response = store.recall_v1(query, full=1, search_mode=mode)
    assert [r["memory_id"] for r in response["results"]] == [memory_id]
    assert response["results"][0]["content"] == "Postgres 16 runs the atlas database"
    confidence = response["confidence"]
    assert confidence["level"] == "none" and confidence["result_count"] == 1
    assert confidence["top_score"] is not None and confidence["top_score"] <= 0.0
    assert "likely nothing relevant" in confidence["rationale"]


def test_top_k_of_a_small_scope_is_every_memory_in_it(memory_store_factory):
    store = memory_store_factory(embedder="hash")
    made = {store.store(text, context="tiny") for text in ("alpha note", "beta note", "gamma note")}
    store.store("other context", context="elsewhere")
    response = store.recall_v1("zzz", k=5, filters={"context_id": "tiny"})
    assert {r["memory_id"] for r in response["results"]} == made
    assert response["confidence"]["level"] == "none"
    # An explicit keyword search still answers only BM25 matches.
    assert store.recall_v1("zzz", k=5, search_mode="keyword", filters={"context_id": "tiny"})["results"] == []


def test_over_http(tmp_path):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(tmp_path / "memory.db", embedder="hash") as store, \
            running(create_app(store, token=TOKEN)) as url:
        memory_id = store.store("Postgres 16 runs the atlas database")
        response = httpx.post(f"{url}/api/v1/memory/recall", json={"query": "zzz", "full": 1},
                              headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    body = response.json()
    assert [r["memory_id"] for r in body["results"]] == [memory_id]
    assert body["confidence"]["level"] == "none"
