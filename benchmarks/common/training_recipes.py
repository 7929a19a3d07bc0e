"""Named training recipes of the learned ranking's trees (``train_rank_two_shapes.py --recipe``).

A recipe is LightGBM parameters over ``train_learned_rank.PARAMS`` and the rounds, learning rate
and LongMemEval weight it defaults to; an option given on the command line wins. "nosample" is the
packaged trees' recipe since branch lme13 (and ``--recipe``'s default); "shipped" is the one before it,
LightGBM's row and column sampling at 0.8 (train_learned_rank.PARAMS, which the comparison scripts
still train with); the others weigh the first places more (benchmarks/quality/rank_recipes.py
compares them held out, docs/results/history.md, branch rank6). Recipes are not part of the
recorded pools' cache key (benchmarks/common/ranking_pools.PoolCache): a new one records nothing again.
"""

from __future__ import annotations

import argparse
from typing import Any

DEFAULTS = {"rounds": 100, "learning_rate": 0.15, "lme_weight": 1}
RECIPES: dict[str, dict[str, Any]] = {
    "shipped": {},  # the packaged trees' recipe until branch lme13 (PARAMS as they are)
    # lambdarank's pairs only where one side is ranked in the first 3 (LightGBM's default: 30)
    "top3": {"params": {"lambdarank_truncation_level": 3}},
    "top2": {"params": {"lambdarank_truncation_level": 2}},
    "top5": {"params": {"lambdarank_truncation_level": 5}},
    "top10": {"params": {"lambdarank_truncation_level": 10}},
    "top3-leaves15": {"params": {"lambdarank_truncation_level": 3, "num_leaves": 15}},
    "top3-300": {"params": {"lambdarank_truncation_level": 3}, "rounds": 300, "learning_rate": 0.05},
    "top3-lme3": {"params": {"lambdarank_truncation_level": 3}, "lme_weight": 3},
    "xendcg": {"params": {"objective": "rank_xendcg"}},
    "leaves15-300": {"params": {"num_leaves": 15}, "rounds": 300, "learning_rate": 0.05},
    "300": {"rounds": 300, "learning_rate": 0.05},
    "top5-300": {"params": {"lambdarank_truncation_level": 5}, "rounds": 300, "learning_rate": 0.05},
    "300-lme2": {"rounds": 300, "learning_rate": 0.05, "lme_weight": 2},
    "lme2": {"lme_weight": 2},
    "lme3": {"lme_weight": 3},
    # every row and every column each round (no bagging): the same trees at any seed; the packaged
    # trees' recipe since branch lme13 (benchmarks/quality/seed_ensemble.py's det-100)
    "nosample": {"params": {"subsample": 1.0, "colsample_bytree": 1.0}},
}


def apply_recipe(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the recipe's rounds, learning rate and LongMemEval weight where the
    command line gave none, and its LightGBM parameters as ``params``."""
    recipe = RECIPES[getattr(args, "recipe", None) or "shipped"]
    for name, default in DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, recipe.get(name, default))
    args.params = dict(recipe.get("params", {}))
    return args


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """``--recipe`` and the settings a recipe defaults (read them through apply_recipe)."""
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="nosample",
                        help="a named training recipe (RECIPES; default nosample, the packaged trees'); "
                             "the options below override its settings")
    parser.add_argument("--rounds", type=int, default=None, help=f"boosting rounds (default {DEFAULTS['rounds']})")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help=f"(default {DEFAULTS['learning_rate']})")
    parser.add_argument("--lme-weight", type=int, default=None,
                        help="each LongMemEval pool counts this many times in training (at least 1; default 1)")
