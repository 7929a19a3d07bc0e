"""The learned ranking's named training recipes (benchmarks/common/training_recipes.py, ``--recipe``) and
their comparison on the first places (benchmarks/quality/rank_recipes.py)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from benchmarks.common import training_recipes
from benchmarks.quality import rank_recipes, train_rank_two_shapes
from localmem.recall.learned_rank import TreeModel
from tests.two_shape_data import LOCOMO, small_data

pytest.importorskip("lightgbm")


def test_a_recipe_sets_its_defaults_and_the_command_line_wins():
    top3 = training_recipes.apply_recipe(argparse.Namespace(recipe="top3"))
    assert top3.params == {"lambdarank_truncation_level": 3}
    assert (top3.rounds, top3.learning_rate, top3.lme_weight) == (100, 0.15, 1)
    longer = training_recipes.apply_recipe(argparse.Namespace(recipe="top3-300", rounds=None,
                                                                    learning_rate=0.1, lme_weight=None))
    assert (longer.rounds, longer.learning_rate) == (300, 0.1)  # the recipe's rounds, the given rate
    # a caller that names no recipe (the other two-shape scripts) trains as before
    plain = training_recipes.apply_recipe(argparse.Namespace(rounds=50, learning_rate=0.2, lme_weight=2))
    assert (plain.params, plain.rounds, plain.learning_rate, plain.lme_weight) == ({}, 50, 0.2, 2)
    with pytest.raises(SystemExit):
        train_rank_two_shapes.main(["--recipe", "no-such-recipe"])
    with pytest.raises(SystemExit):
        rank_recipes.main(["--recipes", "shipped,no-such-recipe"])


def test_the_first_places_count_evidence_turns_once():
    locomo_pool = {"shape": "locomo", "truth": {"evidence": {"D1:2", "D1:5"}}}
    got = rank_recipes.first_places(locomo_pool, ["D1:1", "D1:2", "D1:3", "D1:5"])
    assert got == {"R@1": 0.0, "R@2": 0.5, "top-2 hit": 1.0, "MRR": 0.5, "R@10": 1.0}
    # a long LongMemEval turn stored in parts: its second part is not a second place
    lme_pool = {"shape": "lme", "truth": {"turns": {"3:1"}}}
    got = rank_recipes.first_places(lme_pool, ["2:0", "2:0", "3:1", None])
    assert got["R@2"] == 1.0 and got["MRR"] == 0.5 and got["R@1"] == 0.0
    assert rank_recipes.first_places(lme_pool, ["1:0"]) == {"R@1": 0.0, "R@2": 0.0, "top-2 hit": 0.0, "MRR": 0.0,
                                                            "R@10": 0.0}


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_comparison_reports_each_recipe_held_out_and_across(tmp_path, capsys):
    assert rank_recipes.main([*small_data(tmp_path, 30, 6), "--recipes", "shipped,top3", "--seeds", "0,1"]) == 0
    printed = capsys.readouterr().out
    held, across = printed.split("Trees on the other set only")
    for part in (held, across):
        assert "| shipped |" in part and "| top3 |" in part
        assert "LoCoMo R@1 | LoCoMo R@2 | LoCoMo top-2 hit" in part
    row = next(line for line in held.splitlines() if line.startswith("| top3 |"))
    assert len(row.split("|")[-3].split(",")) == 2  # R@10 per seed, one per seed


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_a_recipe_trains_other_trees_and_is_recorded_in_the_model(tmp_path, capsys):
    data = small_data(tmp_path, 30, 6)
    outputs = {}
    for recipe in ("shipped", "top2"):
        outputs[recipe] = tmp_path / f"{recipe}.json"
        assert train_rank_two_shapes.main([*data, "--pools", str(tmp_path / "pools"), "--recipe", recipe,
                                           "--rounds", "10", "--write", "--output", str(outputs[recipe])]) == 0
    capsys.readouterr()
    saved = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    assert saved["top2"]["params"]["recipe"] == "top2"
    assert saved["top2"]["params"]["lambdarank_truncation_level"] == 2
    assert saved["top2"]["params"]["n_estimators"] == 10  # the command line's rounds over the recipe's
    assert "lambdarank_truncation_level" not in saved["shipped"]["params"]
    assert saved["top2"]["trees"] != saved["shipped"]["trees"]  # the setting reaches LightGBM
    rows = np.random.default_rng(0).random((4, len(TreeModel.from_file(str(outputs["top2"])).features)))
    assert TreeModel.from_file(str(outputs["top2"])).raw_scores(rows).shape == (4,)
