"""The query adapter: the learned model's low-rank map of the query's token vectors
before MaxSim (recall/late_interaction.py, issue 16)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from localmem import Config
from localmem.recall.late_interaction import MAX_ADAPTER_RANK, QueryAdapter, token_matches
from localmem.recall.learned_rank import TreeModel

from store_helpers import new_store
from test_learned_rank import QUESTION, model_dict, tree


def adapter_dict(dims: int, rank: int = 2, seed: int = 0, scale: float = 3.0) -> dict:
    rng = np.random.default_rng(seed)
    return {"down": (rng.normal(size=(dims, rank)) * scale).tolist(),
            "up": (rng.normal(size=(dims, rank)) * scale).tolist()}


def adapted_model(dims: int, **kwargs) -> TreeModel:
    """The question-preferring test model, with a strong random query adapter."""
    return TreeModel.from_dict({**model_dict([tree(QUESTION, 0.5, -6.0, 6.0)]),
                                "query_adapter": adapter_dict(dims, **kwargs)})


def garden_store(embedder="hash", **config):
    store = new_store(embedder=embedder, config=Config(**config)) if config else new_store(embedder=embedder)
    for text in ("Did the garden party on Sunday go well?",
                 "The garden party on Sunday went well, lots of people came",
                 "Bought new tyres for the car"):
        store.store(text)
    return store


def vectors(response: dict) -> dict[str, float]:
    return {r["memory"]["content"]: r["score_components"]["vector"] for r in response["results"]}


def test_the_adapter_adds_its_low_rank_correction():
    rng = np.random.default_rng(1)
    down, up = rng.normal(size=(8, 2)).astype(np.float32), rng.normal(size=(8, 2)).astype(np.float32)
    adapter = QueryAdapter.from_dict({"down": down.tolist(), "up": up.tolist()})
    tokens = rng.normal(size=(3, 8)).astype(np.float32)
    assert adapter.dimensions == 8
    assert np.allclose(adapter(tokens), tokens + tokens @ down @ up.T, atol=1e-5)


def test_an_adapter_that_corrects_nothing_leaves_maxsim_as_it_was():
    store = garden_store()
    backend = store._backend
    dims = backend.dimensions
    zero = QueryAdapter.from_dict({"down": np.ones((dims, 2)).tolist(), "up": np.zeros((dims, 2)).tolist()})
    _, tokens = backend.embed_texts_and_tokens(["garden party Sunday"])
    ids = [{"id": memory_id} for (memory_id,) in store.conn.execute("SELECT id FROM memories")]
    plain, same = token_matches(backend, ids, tokens[0]), token_matches(backend, ids, tokens[0], zero)
    assert plain and plain.keys() == same.keys()
    for memory_id, match in plain.items():
        assert same[memory_id].max_sim == pytest.approx(match.max_sim, abs=1e-6)


def test_recall_moves_the_query_tokens_when_the_model_ranks_it():
    store = garden_store()
    plain = vectors(store.recall("garden party Sunday went well"))
    store.learned_model = adapted_model(store._backend.dimensions)
    response = store.recall("garden party Sunday went well")
    assert response["learned_rank"]["applied"] is True
    adapted = vectors(response)
    assert adapted.keys() == plain.keys()
    assert any(abs(adapted[k] - plain[k]) > 1e-3 for k in plain)  # MaxSim read the adapted tokens


@pytest.mark.parametrize("config, params", [
    ({"learned_rank": False}, {}),
    ({}, {"sort": "time_desc"}),
])
def test_no_adapter_without_the_model_ranking(config, params):
    plain_store = garden_store(**config)
    plain = vectors(plain_store.recall("garden party Sunday went well", **params))
    store = garden_store(**config)
    store.learned_model = adapted_model(store._backend.dimensions)
    response = store.recall("garden party Sunday went well", **params)
    assert response["learned_rank"]["applied"] is False
    assert vectors(response) == pytest.approx(plain)


def test_recall_v1_hybrid_reads_the_adapted_maxsim_and_other_modes_do_not():
    def maxsims(store, mode):
        response = store.recall_v1("garden party Sunday went well", k=3, search_mode=mode)
        return {r["summary"]: r["score_components"]["maxsim"] for r in response["results"]}, response

    plain, _ = maxsims(garden_store(), "hybrid")
    store = garden_store()
    store.learned_model = adapted_model(store._backend.dimensions)
    adapted, response = maxsims(store, "hybrid")
    assert response["learned_rank"]["applied"] is True
    assert any(abs(adapted[k] - plain[k]) > 1e-3 for k in plain if plain[k] is not None)
    semantic, response = maxsims(store, "semantic")
    assert response["learned_rank"]["applied"] is False
    assert all(value is None for value in semantic.values())  # the semantic arm orders by cosine


def test_an_adapter_for_other_dimensions_is_said_not_used():
    store = garden_store()
    dims = store._backend.dimensions
    store.learned_model = adapted_model(dims // 2)
    response = store.recall("garden party Sunday")
    assert response["learned_rank"] == {
        "applied": False,
        "reason": f"the model's query adapter is for {dims // 2}-dimensional tokens; this store's have {dims}"}
    assert response["results"]


@pytest.mark.parametrize("damage, said", [
    (lambda a: "not an adapter", "not an object"),
    (lambda a: {"down": a["down"]}, "KeyError"),
    (lambda a: {**a, "up": a["up"][:-1]}, "dims x rank"),
    (lambda a: {**a, "down": [[1.0, "x"]] * len(a["down"])}, "ValueError"),
    (lambda a: {**a, "down": [row[:1] for row in a["down"]]}, "dims x rank"),
    (lambda a: {**a, "up": [[float("nan")] * 2] * len(a["up"])}, "non-finite"),
    (lambda a: {**a, "down": [[1e300] * 2] * len(a["down"])}, "beyond"),  # would overflow float32
    (lambda a: {"down": [[0.0] * 2] * 2, "up": [[0.0] * 2] * 2}, "dims x rank"),  # rank = dims
    (lambda a: {"down": [[0.0] * (MAX_ADAPTER_RANK + 1)] * 384,
                "up": [[0.0] * (MAX_ADAPTER_RANK + 1)] * 384}, "dims x rank"),
    (lambda a: {"down": [[[0.0]]], "up": [[[0.0]]]}, "dims x rank"),
])
def test_a_damaged_adapter_is_refused_with_the_model(damage, said):
    data = {**model_dict([tree(QUESTION, 0.5, -6.0, 6.0)]), "query_adapter": damage(adapter_dict(16))}
    with pytest.raises(ValueError, match="query adapter") as raised:
        TreeModel.from_dict(data)
    assert said in str(raised.value)


def test_a_model_file_with_a_damaged_adapter_is_said_and_recall_goes_on(tmp_path, capsys):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**model_dict([tree(QUESTION, 0.5, -6.0, 6.0)]),
                                "query_adapter": {"down": [[float("inf")]], "up": [[0.0]]}}))
    store = garden_store(learned_rank_model=str(path))
    response = store.recall("garden party Sunday")
    assert response["learned_rank"]["applied"] is False
    assert response["results"]
    assert "query adapter" in capsys.readouterr().err
