"""The learned ranking's trees averaged over seed groups, and LightGBM's bagging, judged held out
(benchmarks/quality/seed_ensemble.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.quality import seed_ensemble
from benchmarks.quality import train_learned_rank as trl
from localmem.recall import learned_rank
from tests.two_shape_data import LOCOMO, small_data, uniform_pools

pytest.importorskip("lightgbm")


def test_seed_groups_are_disjoint_and_one_member_groups_are_seeds_0_1_2():
    assert [seed_ensemble.group_seeds(3, g) for g in range(3)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [seed_ensemble.group_seeds(1, g) for g in range(3)] == [[0], [1], [2]]
    for name, variant in seed_ensemble.VARIANTS.items():
        assert variant["members"] >= 1 and variant["rounds"] >= 1, name


def test_the_exported_ensemble_scores_the_members_mean_in_the_packaged_format():
    trainer = seed_ensemble.Trainer(uniform_pools(60, 0))
    variant = {"members": 3, "rounds": 8, "learning_rate": 0.3, "params": {"min_child_samples": 5}}
    seeds = seed_ensemble.group_seeds(3, 1)
    rankers = [trainer.member(variant, seed, ("fold", 0)) for seed in seeds]
    exported = seed_ensemble.ensemble_export(rankers, ["hash"], {"n_estimators": 8})
    model = learned_rank.TreeModel.from_dict(exported)
    assert model.feature.shape[0] == 24 and exported["params"]["members"] == 3
    rows = np.random.default_rng(5).random((30, len(learned_rank.FEATURES)))
    mean = trainer.group(variant, seeds, ("fold", 0))(rows)
    single = rankers[0].predict(rows, raw_score=True)
    assert np.allclose(model.raw_scores(rows), mean, atol=1e-9)
    assert not np.allclose(mean, single)  # the seeds gave other trees: the mean is not one member's
    # a one-member export is the member itself (today's packaged file)
    alone = learned_rank.TreeModel.from_dict(seed_ensemble.ensemble_export(rankers[:1], ["hash"], {}))
    assert np.allclose(alone.raw_scores(rows), single, atol=1e-9)


def test_a_member_is_trained_once_and_reused_by_the_groups_holding_its_seed(monkeypatch):
    trainer = seed_ensemble.Trainer(uniform_pools(40, 1))
    calls = []
    real = seed_ensemble.trl.fit
    monkeypatch.setattr(seed_ensemble.trl, "fit", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    one = {"members": 1, "rounds": 3, "learning_rate": 0.3, "params": {"min_child_samples": 5}}
    three = {**one, "members": 3}
    trainer.group(one, [0], ("fold", 1))
    trainer.group(three, [0, 1, 2], ("fold", 1))
    trainer.group(three, [0, 1, 2], ("shape", "lme"))
    assert calls == [0, 1, 2, 0, 1, 2]  # seed 0 without fold 1 once; the lme-only set is other training


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_comparison_reports_each_seed_group_and_their_mean(tmp_path, capsys):
    data = small_data(tmp_path, 30, 6)
    with pytest.raises(SystemExit):
        seed_ensemble.main([*data, "--variants", "shipped,no-such-variant"])
    with pytest.raises(SystemExit):
        seed_ensemble.main([*data, "--groups", "0"])
    capsys.readouterr()
    assert seed_ensemble.main([*data, "--variants", "shipped,ens3-34", "--groups", "2"]) == 0
    held, across = capsys.readouterr().out.split("Trees on the other set only")
    for part in (held, across):
        assert "| shipped | 100 | 0 |" in part and "| shipped | 100 | 1 |" in part
        assert "| ens3-34 | 102 | 0-1-2 |" in part and "| ens3-34 | 102 | 3-4-5 |" in part
        assert "| **ens3-34 mean** | 102 | 2 groups |" in part
        assert "LoCoMo R@1 | LoCoMo R@2" in part and "LME R@10 | LME MRR | LME any@5" in part


def test_the_walk_shaped_model_has_the_variants_tree_count_and_sums_to_the_members_mean():
    packaged = json.loads(Path(trl.MODEL_PATH).read_text(encoding="utf-8"))
    shipped = learned_rank.TreeModel.from_dict(packaged)
    rows = np.random.default_rng(2).random((30, len(shipped.features)))
    three = seed_ensemble.walk_shaped(packaged, seed_ensemble.VARIANTS["ens3-100"])
    assert three.feature.shape[0] == 3 * len(packaged["trees"])
    assert np.allclose(three.raw_scores(rows), shipped.raw_scores(rows))  # three copies, each a third
    assert seed_ensemble.walk_shaped(packaged, seed_ensemble.VARIANTS["ens5-20"]).feature.shape[0] == 100


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_walk_cost_pairs_each_variant_with_the_first_and_trains_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(seed_ensemble.trl, "fit", lambda *a, **k: pytest.fail("the walk cost trains nothing"))
    assert seed_ensemble.main([*small_data(tmp_path, 30, 6), "--variants", "shipped,ens3-100",
                               "--walk-cost", "2"]) == 0
    printed = capsys.readouterr().out
    assert "| shipped | 100 | 1.00 |" in printed and "| ens3-100 | 300 |" in printed
    assert "Trees on both sets" not in printed  # timing only
