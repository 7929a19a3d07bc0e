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
