"""The learned ranking's ``nosample`` recipe (benchmarks/common/training_recipes.py): every row and every column
each round, so the trees are the same at any LightGBM seed; the packaged trees are trained with it (branch lme13)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.common import training_recipes
from benchmarks.quality import train_learned_rank as trl
from localmem.recall import learned_rank
from tests.two_shape_data import uniform_pools

pytest.importorskip("lightgbm")


def test_the_recipe_samples_nothing_and_keeps_the_rest_of_the_shipped_settings():
    args = training_recipes.apply_recipe(argparse.Namespace(recipe="nosample"))
    assert args.params == {"subsample": 1.0, "colsample_bytree": 1.0}
    assert (args.rounds, args.learning_rate, args.lme_weight) == (100, 0.15, 1)


def test_its_trees_are_the_same_at_any_seed_where_the_sampling_recipe_s_are_not():
    pools = uniform_pools(40, 0)
    rows = np.random.default_rng(1).random((30, len(learned_rank.FEATURES)))
    params = {**training_recipes.RECIPES["nosample"]["params"], "min_child_samples": 5}

    def scores(seed: int, chosen: dict) -> np.ndarray:
        return trl.fit(pools, 20, seed, 0.15, chosen).predict(rows, raw_score=True)

    assert np.array_equal(scores(0, params), scores(7, params))
    assert not np.allclose(scores(0, {"min_child_samples": 5}), scores(7, {"min_child_samples": 5}))


def test_the_packaged_trees_are_the_nosample_recipe_s():
    packaged = json.loads(Path(trl.MODEL_PATH).read_text(encoding="utf-8"))
    assert packaged["params"]["recipe"] == "nosample"
    assert packaged["params"]["subsample"] == 1.0 and packaged["params"]["colsample_bytree"] == 1.0
    assert len(packaged["trees"]) == 100 and packaged["depth"] <= 6
