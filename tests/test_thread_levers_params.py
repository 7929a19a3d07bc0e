"""A thread_levers.py variant's own LightGBM settings (``/ff=X``, ``/leaf=N``): read and refused by name,
put over the recipe's for that variant's trees only, and its trees kept apart from the recipe's."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from benchmarks.quality import thread_levers
from localmem.recall.learned_rank import FEATURES
from tests.two_shape_data import random_pools


def test_a_variant_s_settings_are_read_into_lightgbm_s_names():
    cut, flags = thread_levers.read_variant("30+threadtop:4/insession/oncut/ff=0.5/leaf=120")
    assert cut == "30+threadtop:4"
    assert thread_levers.tree_params(flags) == {"colsample_bytree": 0.5, "min_child_samples": 120}
    assert thread_levers.tree_params(thread_levers.read_variant("30/insession")[1]) == {}


@pytest.mark.parametrize("text, said", [("30/ff=0", "ff='0'"), ("30/ff=1.5", "ff='1.5'"), ("30/ff=x", "ff='x'"),
                                        ("30/ff=nan", "ff='nan'"), ("30/leaf=0", "leaf='0'"),
                                        ("30/leaf=2.5", "leaf='2.5'"), ("30/ff=0.5/ff=0.6", "given twice"),
                                        ("30/depth=3", "'depth=3' is no variant flag")])
def test_a_bad_setting_is_refused_naming_it_and_its_variant(text, said):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        thread_levers.read_variant(text)
    assert said in str(refused.value) and text in str(refused.value)


def test_the_script_refuses_a_bad_setting_by_its_option(capsys):
    with pytest.raises(SystemExit):
        thread_levers.main(["--variants", "30,30/ff=2"])
    assert "--variants" in capsys.readouterr().err


def _pools() -> list[dict]:
    return random_pools(5, ["a", "b"] * 6)


def test_the_settings_reach_that_variant_s_trees_only(monkeypatch):
    pytest.importorskip("lightgbm")
    seen = []
    fit = thread_levers.two_shapes.fit

    def recording(pools, args, drop=()):
        seen.append(getattr(args, "params", None))
        return fit(pools, args, drop)

    monkeypatch.setattr(thread_levers.two_shapes, "fit", recording)
    pools = _pools()
    runs = thread_levers.Runs(pools, argparse.Namespace(rounds=5, learning_rate=0.3, lme_weight=1))
    rows = pools[0]["rows"]
    plain = runs.predictor("30", frozenset(), (0,), ("fold", 0))(rows)
    _, flags = thread_levers.read_variant("30/leaf=200")
    strict = runs.predictor("30", flags, (0,), ("fold", 0))(rows)
    assert seen == [None, {"min_child_samples": 200}]
    # 32 training pools of 12 rows (384): no split leaves 200 on each side, so every row scores alike
    assert np.ptp(strict) == 0 and np.ptp(plain) > 0
    # the same trees asked again are not trained again
    runs.predictor("30", flags, (0,), ("fold", 0))
    assert len(seen) == 2


def test_a_setting_does_not_widen_the_pools():
    pools = _pools()
    runs = thread_levers.Runs(pools, argparse.Namespace(rounds=5, learning_rate=0.3, lme_weight=1))
    assert runs.pools(thread_levers.read_variant("30/ff=0.5/oncut")[1]) is pools
    wide = runs.pools(thread_levers.read_variant("30/insession/ff=0.5")[1])
    assert wide[0]["rows"].shape[1] == len(FEATURES) + len(thread_levers.SESSION_SIGNALS)
