"""The two-shape training run (benchmarks/quality/train_rank_two_shapes.py) end to end on a
small LoCoMo conversation and LongMemEval instances: it reports every held-out row and writes
a model recall can load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality import train_rank_two_shapes
from localmem.recall.learned_rank import FEATURES, TreeModel

pytest.importorskip("lightgbm")

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
ANSWER = "Here is a long and generic answer about gardening and the weather. " * 40


def lme_instance(number: int) -> dict:
    pet = ["beagle", "tabby cat", "parrot", "hamster", "goldfish", "tortoise"][number]
    return {
        "question_id": f"q{number}", "question_type": "single-session-user",
        "question": f"What kind of pet did I adopt, number {number}?", "question_date": "2023/06/01 (Thu) 10:00",
        "answer": pet, "answer_session_ids": [f"s{number}b"],
        "haystack_session_ids": [f"s{number}a", f"s{number}b"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 14:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "How do I grow tomatoes on a balcony?", "has_answer": False},
             {"role": "assistant", "content": ANSWER, "has_answer": False}],
            [{"role": "user", "content": f"I adopted a {pet} last week, pet number {number}.", "has_answer": True},
             {"role": "assistant", "content": f"Congratulations on your new {pet}! " + ANSWER[:300],
              "has_answer": False}],
        ],
    }


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_run_reports_held_out_rows_and_writes_a_loadable_model(tmp_path, capsys):
    sample = json.loads(LOCOMO.read_text())[0]
    sample["qa"] = sample["qa"][:30]
    locomo_path = tmp_path / "locomo.json"
    locomo_path.write_text(json.dumps([sample]))
    lme_path = tmp_path / "lme.json"
    lme_path.write_text(json.dumps({"instances": [lme_instance(n) for n in range(6)]}))
    output = tmp_path / "model.json"
    assert train_rank_two_shapes.main(["--embedder", "hash", "--no-cache", "--locomo", str(locomo_path),
                                       "--lme", str(lme_path), "--rounds", "5", "--write",
                                       "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    for row in ("FTS5 BM25", "weighted score alone", "trained on the other dataset only",
                "trees on both, fold held out |", "no role features"):
        assert row in printed
    assert "6 LongMemEval questions (6 instances" in printed
    model = TreeModel.from_file(str(output))
    assert model.features == FEATURES and len(model.feature) == 5
    assert "LongMemEval" in json.loads(output.read_text())["trained_on"]


def test_recorded_pools_are_reused_until_the_configuration_or_item_changes(tmp_path):
    from localmem import Config

    calls = []

    def record():
        calls.append(1)
        return {"keys": ["0:1"], "n": len(calls)}

    cache = train_rank_two_shapes.PoolCache(str(tmp_path), "hash", Config())
    assert cache.get(b"instance-1", record) == {"keys": ["0:1"], "n": 1}
    assert cache.get(b"instance-1", record) == {"keys": ["0:1"], "n": 1} and len(calls) == 1
    assert cache.get(b"instance-2", record)["n"] == 2  # another item is recorded
    changed = train_rank_two_shapes.PoolCache(str(tmp_path), "hash", Config().with_changes(weight_vector=0.5))
    assert changed.get(b"instance-1", record)["n"] == 3  # another configuration too
    assert train_rank_two_shapes.PoolCache(None, "hash", Config()).get(b"x", record)["n"] == 4  # no folder: none kept


def test_longmemeval_pools_count_lme_weight_times_in_training():
    import numpy as np

    pools = [{"shape": "lme", "labels": np.array([1.0, 0.0])}, {"shape": "locomo", "labels": np.array([0.0, 1.0])},
             {"shape": "lme", "labels": np.array([0.0, 0.0])}]
    trained = train_rank_two_shapes.weighted(pools, 3)
    assert [p["shape"] for p in trained] == ["lme"] * 3 + ["locomo"]  # a pool without evidence is left out
    with pytest.raises(SystemExit):
        train_rank_two_shapes.main(["--lme-weight", "0"])
