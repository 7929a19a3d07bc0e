"""The learned ranking's training recipes compared on its first places, held out on both dev sets.

The prompt hook injects recall's first one or two notes, so what matters there is whether the
evidence is first or second, not only in the first ten. Records (or reuses, ``--pools``) every
LoCoMo and LongMemEval dev pool as train_rank_two_shapes.py does, and for each recipe of
``benchmarks/common/training_recipes.RECIPES`` and each LightGBM seed trains the trees

- on both sets without each fold, scoring the fold (fold ``i``: LoCoMo conversation ``i`` and
  every fifth LongMemEval instance), and
- on one set only, scoring the other (leave one dataset out, both directions),

and ranks every pool as recall does (weighted score + learned component over the first
LEARNED_TOP, a gathering question spread across threads). Reported per set: R@1 and R@2 (the
share of a question's evidence in the first one or two), top-2 hit (any evidence in the first
two: what an injection of two notes can serve), MRR and R@10, each the mean over the seeds, with
R@10 per seed. LongMemEval counts distinct turns (a long turn's parts are one), as its runner does.

    python benchmarks/quality/rank_recipes.py --pools DIR [--recipes shipped,top3,...] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.number_options import joined, whole_numbers  # noqa: E402
from benchmarks.common import training_recipes  # noqa: E402
from benchmarks.quality import longmemeval  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402

METRICS = ("R@1", "R@2", "top-2 hit", "MRR", "R@10")
SHAPES = {"locomo": "LoCoMo", "lme": "LongMemEval"}


def first_places(pool: dict, ranked: list[str]) -> dict[str, float]:
    """R@1, R@2, top-2 hit, MRR and R@10 of one pool's ranking."""
    if pool["shape"] == "lme":
        ranked, evidence = longmemeval.distinct(ranked), pool["truth"]["turns"]
    else:
        evidence = pool["truth"]["evidence"]
    first = next((i for i, key in enumerate(ranked) if key in evidence), None)
    return {"R@1": len(evidence & set(ranked[:1])) / len(evidence),
            "R@2": len(evidence & set(ranked[:2])) / len(evidence),
            "top-2 hit": float(bool(evidence & set(ranked[:2]))),
            "MRR": 0.0 if first is None else 1.0 / (first + 1),
            "R@10": len(evidence & set(ranked[:10])) / len(evidence)}


def evaluated(pools: list[dict], predict_for: Callable[[dict], Callable], weight: float) -> list[dict]:
    return [first_places(p, two_shapes.ranked_keys(p, two_shapes.learned_scores(predict_for(p), p, weight)))
            for p in pools]


def recipe_runs(pools: list[dict], recipe: str, seed: int, weight: float) -> dict[str, list[dict]]:
    """Per evaluation ("held out", "across"), every scored pool's metrics under trees of
    ``recipe`` trained with ``seed``: by fold on both sets, and on the other set only."""
    args = training_recipes.apply_recipe(argparse.Namespace(recipe=recipe, seed=seed))
    held = {fold: two_shapes.fit([p for p in pools if p["fold"] != fold], args) for fold in range(two_shapes.FOLDS)}
    alone = {shape: two_shapes.fit([p for p in pools if p["shape"] == shape], args) for shape in SHAPES}
    return {"held out": evaluated(pools, lambda p: held[p["fold"]], weight),
            "across": evaluated(pools, lambda p: alone["lme" if p["shape"] == "locomo" else "locomo"], weight)}


def table(pools: list[dict], runs: dict[str, list[dict[str, list[dict]]]], evaluation: str, title: str) -> list[str]:
    """One markdown table: a row per recipe, per set the seeds' mean of each metric and R@10 per seed."""
    header = "| recipe | " + " | ".join(f"{SHAPES[s]} {m}" for s in SHAPES for m in METRICS) + \
             " | LoCoMo R@10 per seed | LongMemEval R@10 per seed |"
    lines = [title, "", header, "|---|" + "---:|" * (len(SHAPES) * len(METRICS)) + "---|---|"]
    for recipe, by_seed in runs.items():
        cells, per_seed = [], []
        for shape in SHAPES:
            seeds = [[m for m, p in zip(run[evaluation], pools) if p["shape"] == shape] for run in by_seed]
            cells += [f"{np.mean([np.mean([m[k] for m in rows]) for rows in seeds]):.4f}" for k in METRICS]
            per_seed.append(", ".join(f"{np.mean([m['R@10'] for m in rows]):.4f}" for rows in seeds))
        lines.append(f"| {recipe} | " + " | ".join(cells + per_seed) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    parser.add_argument("--recipes", default="shipped,top3", help="comma-separated names of RECIPES")
    parser.add_argument("--seeds", default="0,1,2", type=whole_numbers(0), help="comma-separated LightGBM seeds")
    args = parser.parse_args(argv)
    recipes = args.recipes.split(",")
    unknown = [r for r in recipes if r not in training_recipes.RECIPES]
    if unknown:
        parser.error(f"--recipes: unknown {', '.join(unknown)} (known: {', '.join(sorted(training_recipes.RECIPES))})")
    seeds = args.seeds
    started = time.perf_counter()
    pools = two_shapes.record_all(args, lambda line: None)[0]
    weight = Config().weight_learned
    runs = {}
    for recipe in recipes:
        runs[recipe] = [recipe_runs(pools, recipe, seed, weight) for seed in seeds]
        print(f"[{time.perf_counter() - started:.0f} s] {recipe} done", file=sys.stderr, flush=True)
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines = [f"{len(pools) - n_lme} LoCoMo questions, {n_lme} LongMemEval questions; seeds {joined(seeds)}.", ""]
    lines += table(pools, runs, "held out", "Trees on both sets, fold held out:") + [""]
    lines += table(pools, runs, "across", "Trees on the other set only (LoCoMo's row: trained on LongMemEval; "
                                          "LongMemEval's: trained on LoCoMo):")
    lines += ["", f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
