"""Training the query adapter (benchmarks/quality/train_learned_rank.py): it learns to move a
question's tokens toward its evidence, and the model file it writes loads back."""

from __future__ import annotations


import numpy as np
import pytest

from localmem.recall.learned_rank import FEATURES, TreeModel
from localmem.storage.token_codes import max_sim, query_matrix

from store_helpers import new_store

pytest.importorskip("torch")
from benchmarks.quality import train_learned_rank  # noqa: E402

# Each question names its answer only by a word the answer never uses (with the hash
# embedder, unrelated words have unrelated token vectors): only a learned map can link them.
TURNS = [
    ("D1:1", "I adopted a puppy from the shelter"),
    ("D1:2", "We hiked the ridge trail at dawn"),
    ("D1:3", "My sister bakes sourdough every weekend"),
    ("D1:4", "The quarterly report is due on Friday"),
    ("D1:5", "He repaired the bicycle chain himself"),
    ("D1:6", "They painted the kitchen a pale green"),
]
QUESTIONS = [
    ("which pet joined the family", "D1:1"),
    ("what outdoor walk happened early", "D1:2"),
    ("who makes bread at home", "D1:3"),
    ("when must the work document arrive", "D1:4"),
    ("what did he fix on his bike", "D1:5"),
    ("which room got new colour", "D1:6"),
]


def training_store():
    store = new_store()
    for dia, text in TURNS:
        store.store(text, tags=["conv:0"], metadata={"dia_id": dia})
    questions = [{"question": q, "evidence": [dia], "conv_tag": "conv:0", "category": 4}
                 for q, dia in QUESTIONS]
    return store, questions


def evidence_ranks(store, data, adapter) -> list[int]:
    """Each training question's evidence rank by MaxSim over its conversation (0 = first),
    computed as recall computes it (query_matrix, max_sim)."""
    dias, signs, owner = data.scopes["conv:0"]
    memories = [signs[owner == index] for index in range(len(dias))]
    ranks = []
    for q, _ in data.questions:
        _, tokens = store._backend.embed_texts_and_tokens([q["question"]])
        query = query_matrix(tokens[0], data.centre, adapter)
        scores = [max_sim(query, memory) for memory in memories]
        order = [dias[i] for i in np.argsort(-np.array(scores), kind="stable")]
        ranks.append(order.index(q["evidence"][0]))
    return ranks


def test_the_adapter_learns_to_rank_the_evidence_first(monkeypatch):
    store, questions = training_store()
    data = train_learned_rank.AdapterData(store, questions)
    assert len(data.scopes["conv:0"][0]) == len(TURNS)
    # The training input is recall's query matrix before its L1 normalisation.
    _, tokens = store._backend.embed_texts_and_tokens([QUESTIONS[0][0]])
    plain = query_matrix(tokens[0], data.centre)
    assert np.allclose(plain, data.questions[0][1] / np.abs(data.questions[0][1]).sum(1, keepdims=True))
    before = evidence_ranks(store, data, None)
    monkeypatch.setitem(train_learned_rank.ADAPTER, "epochs", 25)
    monkeypatch.setitem(train_learned_rank.ADAPTER, "learning_rate", 0.1)
    monkeypatch.setitem(train_learned_rank.ADAPTER, "batch", 6)
    adapter = train_learned_rank.fit_adapter(data)
    after = evidence_ranks(store, data, adapter)
    assert sum(after) < sum(before)
    assert after.count(0) > before.count(0)


def test_a_held_out_conversation_is_left_out_of_training():
    store, questions = training_store()
    data = train_learned_rank.AdapterData(store, questions)
    adapter = train_learned_rank.fit_adapter(data, exclude={"conv:0"})  # nothing left to learn from
    assert not np.abs(adapter.up).any()  # up starts at zero and no step moved it


def test_the_exported_file_carries_the_adapter_back():
    store, questions = training_store()
    adapter = train_learned_rank.fit_adapter(train_learned_rank.AdapterData(store, questions))

    class OneLeaf:  # the part of a LightGBM ranker export() reads
        class booster_:
            @staticmethod
            def dump_model():
                return {"tree_info": [{"tree_structure": {"leaf_value": 0.5}}]}

    exported = train_learned_rank.export(OneLeaf(), ["hash"], {}, adapter)
    model = TreeModel.from_dict(exported)
    assert model.features == FEATURES and model.query_adapter is not None
    assert np.allclose(model.query_adapter.down, adapter.down, atol=1e-6)
    assert np.allclose(model.query_adapter.up, adapter.up, atol=1e-6)


def test_a_feature_ablation_zeroes_only_its_columns_and_leaves_the_pools_alone():
    rows = np.arange(2 * len(FEATURES), dtype=np.float64).reshape(2, len(FEATURES)) + 1.0
    pools = [{"rows": rows, "labels": np.array([1, 0])}]
    names = train_learned_rank.FEATURE_GROUPS["date features"]
    changed = train_learned_rank.without_features(pools, names)
    dropped = [FEATURES.index(name) for name in names]
    kept = [i for i in range(len(FEATURES)) if i not in dropped]
    assert (changed[0]["rows"][:, dropped] == 0).all()
    assert (changed[0]["rows"][:, kept] == rows[:, kept]).all()
    assert (pools[0]["rows"] == np.arange(2 * len(FEATURES)).reshape(2, len(FEATURES)) + 1.0).all()
    assert changed[0]["labels"] is pools[0]["labels"]
    assert {name for group in train_learned_rank.FEATURE_GROUPS.values() for name in group} <= set(FEATURES)
