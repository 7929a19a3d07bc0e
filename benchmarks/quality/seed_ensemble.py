"""The learned ranking's trees averaged over seeds, and LightGBM's own bagging, judged over seed groups.

Issue 41's held-out LongMemEval turn R@10 of the packaged recipe moves with LightGBM's seed (its
rows and features are sampled per round). This compares ways of taking that variance out of the
trees themselves, each a VARIANTS entry: ``members`` trees trained with seeds in a row, their raw
scores averaged (the same as one model whose trees' leaf values are divided by ``members``: the
packaged format, with ``members * rounds`` trees), with its rounds, learning rate and LightGBM
parameters over ``train_learned_rank.PARAMS``, and ``questions``: the share of the training
questions each member is trained on (drawn with the member's seed within each set; 1 when absent).

Each variant is judged on ``--groups`` disjoint seed groups: group ``g`` of a variant of ``k``
members trains with seeds ``g*k .. g*k+k-1`` (one member: seeds 0, 1, 2), on the pools
train_rank_two_shapes.py records (``--pools``), as rank_recipes.py judges a recipe:

- held out: trees on both sets without each fold score the fold (fold ``i``: LoCoMo conversation
  ``i`` and every fifth LongMemEval instance);
- across: trees on one set only score the other (leave one dataset out, both directions);

in recall's order (weighted score + learned component over the first LEARNED_TOP, a gathering
question spread across threads). Reported per group and their mean: LoCoMo R@1, R@2, MRR, R@10;
LongMemEval (distinct turns) R@1, R@2, turn R@5, R@10, MRR and session any@5; and the trees a
recall walks. Trees trained once are reused within a run (a one-member seed is a member of the
ensemble groups that hold it); each variant's rows are also written to stderr as it ends.

``--walk-cost TURNS`` trains nothing: it times recall's tree walk at each variant's tree count (the
packaged trees' shapes, once per member), the variants taking turns, as ratios to the first.

    python benchmarks/quality/seed_ensemble.py --pools DIR [--variants shipped,ens3-34,...] [--groups 3]
    python benchmarks/quality/seed_ensemble.py --pools DIR --variants shipped,ens3-100 --walk-cost 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.number_options import whole_number  # noqa: E402
from benchmarks.quality import rank_recipes  # noqa: E402
from benchmarks.quality import train_learned_rank as trl  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import learned_rank  # noqa: E402

# members: trees averaged; rounds and learning_rate per member; params over train_learned_rank.PARAMS;
# questions: each member's share of the training questions
VARIANTS: dict[str, dict[str, Any]] = {
    "shipped": {"members": 1, "rounds": 100, "learning_rate": 0.15},
    # about today's tree count: k members of 100/k rounds at k times the rate
    "ens3-34": {"members": 3, "rounds": 34, "learning_rate": 0.45},
    "ens5-20": {"members": 5, "rounds": 20, "learning_rate": 0.75},
    # today's rounds per member: k times the trees
    "ens3-100": {"members": 3, "rounds": 100, "learning_rate": 0.15},
    "ens5-100": {"members": 5, "rounds": 100, "learning_rate": 0.15},
    # LightGBM's own bagging, fewer rows (and features) per round, more rounds at a lower rate
    "bag05-300": {"members": 1, "rounds": 300, "learning_rate": 0.05, "params": {"subsample": 0.5}},
    "bag05-ff06-300": {"members": 1, "rounds": 300, "learning_rate": 0.05,
                       "params": {"subsample": 0.5, "colsample_bytree": 0.6}},
    "bag06-ff06-100": {"members": 1, "rounds": 100, "learning_rate": 0.15,
                       "params": {"subsample": 0.6, "colsample_bytree": 0.6}},
    # lme13's three (pre-registered), each at today's tree count:
    # no sampling at all (every row, every column each round): trees the same at any seed
    "det-100": {"members": 1, "rounds": 100, "learning_rate": 0.15,
                "params": {"subsample": 1.0, "colsample_bytree": 1.0}},
    # the recipe's row sampling drawn by question (a round sees whole questions' pools, 0.8 of them)
    "qbag08-100": {"members": 1, "rounds": 100, "learning_rate": 0.15, "params": {"bagging_by_query": True}},
    # bagging the training questions: each of ens5-20's members trained on its own 0.8 of the questions
    "qsub08-ens5-20": {"members": 5, "rounds": 20, "learning_rate": 0.75, "questions": 0.8},
}
LOCOMO_KEYS = ("R@1", "R@2", "MRR", "R@10")
LME_KEYS = ("R@1", "R@2", "R@5", "R@10", "MRR", "any@5")


def group_seeds(members: int, group: int) -> list[int]:
    """The seeds of a variant's group: ``members`` in a row, the groups disjoint."""
    return list(range(group * members, (group + 1) * members))


def check_variant(name: str, variant: dict[str, Any]) -> None:
    """Refuse a variant whose settings cannot be trained, naming the setting."""
    if variant["members"] < 1 or variant["rounds"] < 1:
        raise ValueError(f"variant {name}: members and rounds must be at least 1")
    share = variant.get("questions", 1.0)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        raise ValueError(f"variant {name}: questions must be a share in (0, 1], not {share!r}")


def question_sample(pools: list[dict], share: float, seed: int) -> list[dict]:
    """``share`` of the pools, drawn with ``seed`` without replacement within each shape (LoCoMo's
    760 questions do not crowd out LongMemEval's few dozen), in their given order."""
    if share >= 1:
        return list(pools)
    rng = np.random.default_rng(seed)
    kept: set[int] = set()
    for shape in sorted({p["shape"] for p in pools}):
        members = [i for i, p in enumerate(pools) if p["shape"] == shape]
        count = max(1, round(share * len(members)))
        kept.update(int(i) for i in rng.choice(members, size=count, replace=False))
    return [p for i, p in enumerate(pools) if i in kept]


def averaged(predictors: list[Callable[[np.ndarray], np.ndarray]]) -> Callable[[np.ndarray], np.ndarray]:
    """The members' mean raw score (recall's sigmoid is taken of it, as of one model's)."""
    return lambda rows: np.mean([predict(rows) for predict in predictors], axis=0)


def ensemble_export(rankers: list, embedders: list[str], settings: dict, delta=None) -> dict:
    """The members as one model of the packaged format (``trl.export``): every member's trees,
    each leaf value divided by the member count, so the sum recall takes is the members' mean."""
    exported = [trl.export(ranker, embedders, settings, delta=delta) for ranker in rankers]
    trees = [{**tree, "value": [value / len(rankers) for value in tree["value"]]}
             for model in exported for tree in model["trees"]]
    return {**exported[0], "trees": trees, "depth": max(model["depth"] for model in exported),
            "params": {**exported[0]["params"], "members": len(rankers)}}


class Trainer:
    """Trees per (variant settings, seed, training set), each trained once in a run."""

    def __init__(self, pools: list[dict]) -> None:
        self.pools = pools
        self.trained: dict[tuple, Any] = {}

    def member(self, variant: dict, seed: int, subset: tuple) -> Any:
        """A LightGBM ranker of ``variant``'s settings and ``seed`` trained without fold ``n``
        (``subset`` ("fold", n)) or on one set only (("shape", name)), as two_shapes.fit trains."""
        params = variant.get("params", {})
        share = variant.get("questions", 1.0)
        key = (variant["rounds"], variant["learning_rate"], tuple(sorted(params.items())), share, seed, subset)
        if key not in self.trained:
            kind, value = subset
            chosen = [p for p in self.pools if (p["fold"] != value if kind == "fold" else p["shape"] == value)]
            chosen = question_sample(two_shapes.weighted(chosen, 1), share, seed)
            self.trained[key] = trl.fit(chosen, variant["rounds"], seed, variant["learning_rate"], dict(params))
        return self.trained[key]

    def predictor(self, variant: dict, seed: int, subset: tuple) -> Callable[[np.ndarray], np.ndarray]:
        ranker = self.member(variant, seed, subset)
        return lambda rows: ranker.predict(rows, raw_score=True)

    def group(self, variant: dict, seeds: list[int], subset: tuple) -> Callable[[np.ndarray], np.ndarray]:
        return averaged([self.predictor(variant, seed, subset) for seed in seeds])


def pool_figures(pool: dict, predict: Callable[[np.ndarray], np.ndarray], weight: float) -> dict[str, float]:
    """rank_recipes.first_places and the runner's metrics (two_shapes.pool_metrics) of one ranking."""
    ranked = two_shapes.ranked_keys(pool, two_shapes.learned_scores(predict, pool, weight))
    return {**two_shapes.pool_metrics(pool, ranked), **rank_recipes.first_places(pool, ranked)}


def group_runs(trainer: Trainer, variant: dict, seeds: list[int], weight: float) -> dict[str, list[dict]]:
    """Every pool's figures held out by fold and across (trained on the other set only)."""
    held = {fold: trainer.group(variant, seeds, ("fold", fold)) for fold in range(two_shapes.FOLDS)}
    alone = {shape: trainer.group(variant, seeds, ("shape", shape)) for shape in ("locomo", "lme")}
    pools = trainer.pools
    return {"held out": [pool_figures(p, held[p["fold"]], weight) for p in pools],
            "across": [pool_figures(p, alone["lme" if p["shape"] == "locomo" else "locomo"], weight)
                       for p in pools]}


def summary(pools: list[dict], figures: list[dict]) -> list[float]:
    """LoCoMo's LOCOMO_KEYS and LongMemEval's LME_KEYS, each the mean over the set's pools."""
    locomo = [f for f, p in zip(figures, pools) if p["shape"] == "locomo"]
    lme = [f for f, p in zip(figures, pools) if p["shape"] == "lme"]
    return two_shapes.means(locomo, LOCOMO_KEYS) + two_shapes.means(lme, LME_KEYS)


def table(pools: list[dict], runs: dict[str, list[tuple[list[int], dict]]], evaluation: str) -> list[str]:
    """A row per variant and seed group, and the groups' mean."""
    lines = ["| variant | trees | seeds | " + " | ".join(f"LoCoMo {k}" for k in LOCOMO_KEYS) + " | " +
             " | ".join(f"LME {k}" for k in LME_KEYS) + " |",
             "|---|---:|---|" + "---:|" * (len(LOCOMO_KEYS) + len(LME_KEYS))]
    for name, groups in runs.items():
        trees = VARIANTS[name]["members"] * VARIANTS[name]["rounds"]
        rows = [summary(pools, run[evaluation]) for _, run in groups]
        for (seeds, _), row in zip(groups, rows):
            lines.append(f"| {name} | {trees} | {'-'.join(map(str, seeds))} | " +
                         " | ".join(f"{v:.4f}" for v in row) + " |")
        lines.append(f"| **{name} mean** | {trees} | {len(groups)} groups | " +
                     " | ".join(f"{v:.4f}" for v in np.mean(rows, axis=0)) + " |")
    return lines


def walk_shaped(packaged: dict, variant: dict) -> learned_rank.TreeModel:
    """A model of ``variant``'s tree count and the packaged trees' shapes (its first ``rounds`` trees,
    cycled if it has fewer, once per member, leaf values divided by the members): what recall
    would walk, without training it (the walk's cost depends on the trees' count and depth)."""
    count = len(packaged["trees"])
    member = [packaged["trees"][i % count] for i in range(variant["rounds"])]
    trees = [{**tree, "value": [value / variant["members"] for value in tree["value"]]}
             for _ in range(variant["members"]) for tree in member]
    return learned_rank.TreeModel.from_dict({**packaged, "trees": trees})


def walk_cost(pools: list[dict], names: list[str], repeats: int, packaged: dict) -> list[str]:
    """Each variant's walk_shaped model walked over every pool's first LEARNED_TOP rows by weighted
    score (what recall's learned stage scores), the variants taking turns ``repeats`` times; the
    time of each against the first's, paired turn by turn."""
    columns = len(packaged["features"])
    blocks = [np.ascontiguousarray(p["rows"][np.argsort(-p["final"], kind="stable")[:learned_rank.LEARNED_TOP],
                                             :columns]) for p in pools]
    models = {name: walk_shaped(packaged, VARIANTS[name]) for name in names}
    spent: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            began = time.perf_counter()
            for block in blocks:
                models[name].raw_scores(block)
            spent[name].append((time.perf_counter() - began) / len(blocks))
    first = np.array(spent[names[0]])
    lines = [f"The trees' walk over a pool's first {learned_rank.LEARNED_TOP} rows ({len(blocks)} pools a turn, "
             f"{repeats} turns, the variants taking turns), each variant's tree count in the packaged trees' "
             f"shapes; median of the per-turn ratios to {names[0]}:", "",
             f"| variant | trees | time / {names[0]} |", "|---|---:|---:|"]
    for name in names:
        lines.append(f"| {name} | {models[name].feature.shape[0]} | "
                     f"{float(np.median(np.array(spent[name]) / first)):.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    parser.add_argument("--variants", default="shipped,ens3-34,ens5-20", help="comma-separated names of VARIANTS")
    parser.add_argument("--groups", type=whole_number(1), default=3, help="disjoint seed groups per variant")
    parser.add_argument("--walk-cost", type=whole_number(1), default=None, metavar="TURNS",
                        help="only time the tree walk of each variant's tree count (the packaged trees' shapes), "
                             "paired, over TURNS turns (no figures)")
    args = parser.parse_args(argv)
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)} (known: {', '.join(sorted(VARIANTS))})")
    for name in names:
        try:
            check_variant(name, VARIANTS[name])
        except ValueError as refused:
            parser.error(f"--variants: {refused}")
    started = time.perf_counter()
    pools = two_shapes.record_all(args, lambda line: None)[0]
    if args.walk_cost:
        packaged = json.loads(Path(trl.MODEL_PATH).read_text(encoding="utf-8"))
        print("\n".join(walk_cost(pools, names, args.walk_cost, packaged)))
        return 0
    weight = Config().weight_learned
    trainer = Trainer(pools)
    runs = {}
    for name in names:
        variant = VARIANTS[name]
        runs[name] = []
        for group in range(args.groups):
            seeds = group_seeds(variant["members"], group)
            runs[name].append((seeds, group_runs(trainer, variant, seeds, weight)))
            print(f"[{time.perf_counter() - started:.0f} s] {name} seeds {seeds} done", file=sys.stderr, flush=True)
        for evaluation in ("held out", "across"):  # each variant's rows as it ends: a long run keeps them
            print("\n".join([f"{evaluation}:", *table(pools, {name: runs[name]}, evaluation)]), file=sys.stderr,
                  flush=True)
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines = [f"{len(pools) - n_lme} LoCoMo questions, {n_lme} LongMemEval questions; {args.groups} seed groups.",
             "", "Trees on both sets, fold held out:", "", *table(pools, runs, "held out"), "",
             "Trees on the other set only (LoCoMo's columns: trained on LongMemEval; LongMemEval's: on LoCoMo):", "",
             *table(pools, runs, "across"), "", f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
