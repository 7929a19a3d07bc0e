"""seed_ensemble.py's variance levers at today's tree count: members trained on their own share of the
training questions (``questions``), trees without sampling, rows sampled by question."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality import seed_ensemble
from localmem.recall import learned_rank
from tests.two_shape_data import uniform_pools

pytest.importorskip("lightgbm")


def _lme4_pools(count: int, seed: int) -> list[dict]:
    return uniform_pools(count, seed, lme_every=4)  # a quarter LongMemEval's


def test_a_question_sample_keeps_each_sets_share_in_order_and_depends_on_the_seed():
    pools = _lme4_pools(100, 0)  # 25 LongMemEval, 75 LoCoMo
    sample = seed_ensemble.question_sample(pools, 0.8, 7)
    assert sum(p["shape"] == "lme" for p in sample) == 20 and sum(p["shape"] == "locomo" for p in sample) == 60
    numbers = [p["number"] for p in sample]
    assert numbers == sorted(numbers) and len(set(numbers)) == 80  # no question twice, the given order
    assert numbers == [p["number"] for p in seed_ensemble.question_sample(pools, 0.8, 7)]
    assert numbers != [p["number"] for p in seed_ensemble.question_sample(pools, 0.8, 8)]
    assert seed_ensemble.question_sample(pools, 1.0, 7) == pools
    assert len(seed_ensemble.question_sample(pools[:4], 0.1, 0)) == 2  # at least one question of each set


@pytest.mark.parametrize("share", [0, -0.5, 1.5, True, "0.8", None])
def test_a_bad_question_share_is_refused_by_name(share):
    with pytest.raises(ValueError, match="questions"):
        seed_ensemble.check_variant("bad", {"members": 2, "rounds": 5, "learning_rate": 0.3, "questions": share})


def test_the_command_refuses_a_variant_with_a_bad_share_before_reading_lme4_pools(monkeypatch, capsys):
    monkeypatch.setitem(seed_ensemble.VARIANTS, "bad-share", {"members": 2, "rounds": 5, "learning_rate": 0.3,
                                                              "questions": 2})
    monkeypatch.setattr(seed_ensemble.two_shapes, "record_all", lambda *a, **k: pytest.fail("pools were read"))
    with pytest.raises(SystemExit):
        seed_ensemble.main(["--variants", "shipped,bad-share"])
    assert "bad-share: questions must be a share" in capsys.readouterr().err


def test_every_packaged_variant_passes_the_check():
    for name, variant in seed_ensemble.VARIANTS.items():
        seed_ensemble.check_variant(name, variant)


def test_each_member_trains_on_its_own_share_of_the_training_questions(monkeypatch):
    trainer = seed_ensemble.Trainer(_lme4_pools(100, 1))
    seen = []
    real = seed_ensemble.trl.fit
    monkeypatch.setattr(seed_ensemble.trl, "fit",
                        lambda pools, *a, **k: seen.append([p["number"] for p in pools]) or real(pools, *a, **k))
    variant = {"members": 2, "rounds": 3, "learning_rate": 0.3, "questions": 0.5,
               "params": {"min_child_samples": 5}}
    trainer.group(variant, [0, 1], ("fold", 2))
    assert len(seen) == 2 and seen[0] != seen[1]
    for numbers in seen:
        assert len(numbers) == 40 and all(n % 5 != 2 for n in numbers)  # half of the 80 outside fold 2
    whole = {**variant, "questions": 1.0}
    trainer.group(whole, [0], ("fold", 2))
    assert len(seen[2]) == 80  # the same seed and rounds with every question: other trees, not the cached ones


def test_trees_without_sampling_are_the_same_at_any_seed_and_by_question_sampling_differs():
    trainer = seed_ensemble.Trainer(_lme4_pools(60, 2))
    rows = np.random.default_rng(3).random((30, len(learned_rank.FEATURES)))

    def scores(name: str, seed: int) -> np.ndarray:
        variant = seed_ensemble.VARIANTS[name]
        small = {**variant, "rounds": 10, "params": {**variant.get("params", {}), "min_child_samples": 5}}
        return trainer.group(small, [seed], ("fold", 0))(rows)

    assert np.array_equal(scores("det-100", 0), scores("det-100", 1))
    assert not np.allclose(scores("shipped", 0), scores("shipped", 1))
    assert not np.allclose(scores("qbag08-100", 0), scores("qbag08-100", 1))
    assert not np.allclose(scores("qbag08-100", 0), scores("shipped", 0))  # the setting reached LightGBM
