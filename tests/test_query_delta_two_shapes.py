"""The query delta trained on both shapes (benchmarks/quality/query_delta_two_shapes.py): each
LongMemEval instance is a scope of its own, its sign codes decoded when its question trains,
and a fold's scopes are left out of the delta trained without it."""

from __future__ import annotations

import numpy as np
import pytest

from localmem import Config

from store_helpers import new_store
from test_adapter_training import QUESTIONS, TURNS
from two_shape_data import lme_instance

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
from benchmarks.quality import query_delta_two_shapes as two  # noqa: E402
from benchmarks.quality import train_learned_rank  # noqa: E402

pytestmark = pytest.mark.model
MODEL = "st:all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def data():
    store = new_store(embedder=MODEL)
    for dia, text in TURNS:
        store.store(text, tags=["conv:0"], metadata={"dia_id": dia})
    questions = [{"question": q, "evidence": [dia], "conv_tag": "conv:0", "category": 4} for q, dia in QUESTIONS]
    instances = [lme_instance(n) for n in range(3)] + [{**lme_instance(3), "question_id": "q3_abs"}]
    config = Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"})
    built = two.TwoShapeData(train_learned_rank.AdapterData(store, questions), instances,
                             store._backend.embedder, config, lambda line: None)
    return built, instances, store._backend.meta("embedder")


def test_each_instance_is_a_scope_with_its_turns_and_evidence(data):
    built, instances, _ = data
    assert sorted(built.packed) == ["lme:q0", "lme:q1", "lme:q2"]  # the abstention has nothing to find
    keys, signs, owner = built.torch_scope("lme:q1")
    assert "1:0" in keys and len(set(owner.tolist())) == len(keys)
    assert signs.shape[0] == owner.shape[0] and set(np.unique(signs.numpy())) <= {-1.0, 1.0}
    asked = {q["conv_tag"]: q for q, _ in built.questions}
    assert asked["lme:q1"]["evidence"] == {"1:0"} and asked["lme:q1"]["question"] == instances[1]["question"]
    assert built.torch_scope("conv:0")[0] == built.locomo.scopes["conv:0"][0]  # LoCoMo's scopes as before


def test_a_fold_is_left_out_of_its_delta(data):
    built, instances, model_name = data
    held = two.fold_scopes(instances, 1)
    assert held == {"conv:1", "lme:q1"}
    only_lme = train_learned_rank.fit_query_delta(built, model_name, {"conv:0"} | held)
    without_fold = train_learned_rank.fit_query_delta(built, model_name, held)
    changes = [np.abs(d.change(name)).max() for d in (only_lme, without_fold) for name in list(d.layers)[:1]]
    assert all(c > 0 for c in changes)  # both learned something
    assert not np.allclose(only_lme.change(next(iter(only_lme.layers))),
                           without_fold.change(next(iter(without_fold.layers))))  # LoCoMo's questions count
