"""Training the query delta (benchmarks/quality/train_learned_rank.py): tuning MiniLM's query
encoding moves a question's tokens toward its evidence, and the model file it writes
loads back with the delta."""

from __future__ import annotations


import numpy as np
import pytest

from localmem.recall.learned_rank import TreeModel
from localmem.storage.token_codes import max_sim, query_matrix

from store_helpers import new_store
from test_adapter_training import QUESTIONS, TURNS

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
from benchmarks.quality import train_learned_rank  # noqa: E402

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def minilm_training():
    store = new_store(embedder="st:all-MiniLM-L6-v2")
    for dia, text in TURNS:
        store.store(text, tags=["conv:0"], metadata={"dia_id": dia})
    # MiniLM already links each question to its own answer, so each is given another
    # turn's as its evidence: only training can make MaxSim prefer it.
    dias = [dia for _, dia in QUESTIONS]
    questions = [{"question": q, "evidence": [dias[(n + 3) % len(dias)]], "conv_tag": "conv:0", "category": 4}
                 for n, (q, _) in enumerate(QUESTIONS)]
    return store, train_learned_rank.AdapterData(store, questions)


def evidence_ranks(store, data, delta) -> list[int]:
    """Each question's evidence rank by MaxSim over its conversation (0 = first), with the
    query tokens recall would read: the embedder's, tuned by ``delta`` when given."""
    backend = store._backend
    dias, signs, owner = data.scopes["conv:0"]
    memories = [signs[owner == index] for index in range(len(dias))]
    ranks = []
    for q, _ in data.questions:
        tokens = (backend.embed_query_tokens(q["question"], delta) if delta is not None
                  else backend.embed_texts_and_tokens([q["question"]])[1][0])
        scores = [max_sim(query_matrix(tokens, data.centre), memory) for memory in memories]
        order = [dias[i] for i in np.argsort(-np.array(scores), kind="stable")]
        ranks.append(order.index(q["evidence"][0]))
    return ranks


def test_the_delta_learns_to_rank_the_evidence_first(minilm_training, monkeypatch):
    store, data = minilm_training
    before = evidence_ranks(store, data, None)
    monkeypatch.setitem(train_learned_rank.DELTA, "epochs", 12)
    monkeypatch.setitem(train_learned_rank.DELTA, "learning_rate", 0.01)
    monkeypatch.setitem(train_learned_rank.DELTA, "batch", 6)
    delta = train_learned_rank.fit_query_delta(data, "all-MiniLM-L6-v2")
    assert sorted(delta.layers) == sorted(f"encoder.layer.{n}.attention.self.{part}"
                                          for n in range(6) for part in ("query", "value"))
    after = evidence_ranks(store, data, delta)
    assert sum(after) < sum(before), (before, after)
    assert after.count(0) > before.count(0), (before, after)


def test_a_held_out_conversation_is_left_out_and_the_export_carries_the_delta(minilm_training):
    store, data = minilm_training
    untouched = train_learned_rank.fit_query_delta(data, "all-MiniLM-L6-v2", exclude={"conv:0"})
    assert not any(np.abs(up).any() for _, up in untouched.layers.values())  # up starts at zero

    class OneLeaf:  # the part of a LightGBM ranker export() reads
        class booster_:
            @staticmethod
            def dump_model():
                return {"tree_info": [{"tree_structure": {"leaf_value": 0.5}}]}

    rng = np.random.default_rng(0)
    delta = type(untouched)({name: (down, rng.normal(size=up.shape).astype(np.float32) * 0.01)
                             for name, (down, up) in untouched.layers.items()})
    model = TreeModel.from_dict(train_learned_rank.export(OneLeaf(), ["all-MiniLM-L6-v2"], {}, delta=delta))
    assert model.query_adapter is None and model.query_delta is not None
    for name, (down, up) in delta.layers.items():
        assert np.allclose(model.query_delta.layers[name][0], down, atol=1e-6)
        assert np.allclose(model.query_delta.layers[name][1], up, atol=1e-6)
