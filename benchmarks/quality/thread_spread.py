"""The thread spread of gathering questions (recall/thread_spread.py), held out on both dev sets.

Records every LoCoMo and LongMemEval dev pool once (train_rank_two_shapes.py's recording and
folds), and for each LightGBM seed trains the trees on both sets without each fold and ranks
the fold as recall does: by weighted score + learned component, then, for a question whose
words gather (``thread_spread.gathers``), its first ten spread across threads. Reported per
seed and on the mean: no spread, recall's setting (at most PER_THREAD of a thread within
SCORE_GAP), every setting of the grid below, and the setting chosen for each fold on the other
four folds (the best sum of both sets' R@10 there), which is the honest estimate of a setting
picked on this data.

    python benchmarks/quality/thread_spread.py --pools DIR [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import thread_spread  # noqa: E402

GRID = [(m, gap) for m, gap in itertools.product((1, 2, 3, 4), (0.1, 0.2, 0.3, 0.4, 9.0))]
NONE = "no spread"
SHIPPED = f"recall's: {thread_spread.PER_THREAD} per thread, gap {thread_spread.SCORE_GAP}"
CHOSEN = "chosen per fold on the other folds"


def settings() -> dict[str, bool | tuple[int, float]]:
    return {NONE: False, SHIPPED: True, **{f"{m} per thread, gap {gap}": (m, gap) for m, gap in GRID}}


def means_by_shape(pools: list[dict], rows: list[dict]) -> list[float]:
    out = []
    for shape in ("locomo", "lme"):
        out += two_shapes.means([r for r, p in zip(rows, pools) if p["shape"] == shape], two_shapes.KEYS)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    args = parser.parse_args(argv)
    pools = two_shapes.record_all(args, lambda line: None)[0]
    weight = Config().weight_learned
    gathering = {shape: sum(p["shape"] == shape and thread_spread.gathers(p["question"]) for p in pools)
                 for shape in ("locomo", "lme")}
    table: dict[str, list[list[float]]] = {name: [] for name in [*settings(), CHOSEN]}
    choices: list[str] = []
    for seed in args.seeds:
        options = argparse.Namespace(lme_weight=1, rounds=args.rounds, seed=seed, learning_rate=args.learning_rate)
        trees = {fold: two_shapes.fit([p for p in pools if p["fold"] != fold], options)
                 for fold in range(two_shapes.FOLDS)}
        scores = [two_shapes.learned_scores(trees[p["fold"]], p, weight) for p in pools]
        rows = {name: [two_shapes.scored(p, s, spread) for p, s in zip(pools, scores)]
                for name, spread in settings().items()}
        for name, metrics in rows.items():
            table[name].append(means_by_shape(pools, metrics))
        chosen = [None] * len(pools)
        for fold in range(two_shapes.FOLDS):
            def quality(name: str) -> float:
                return sum(np.mean([m["R@10"] for m, p in zip(rows[name], pools) if p["fold"] != fold
                                    and p["shape"] == shape]) for shape in ("locomo", "lme"))
            best = max((n for n in rows if n not in (SHIPPED,)), key=quality)
            choices.append(f"seed {seed}, fold {fold}: {best}")
            for i, p in enumerate(pools):
                if p["fold"] == fold:
                    chosen[i] = rows[best][i]
        table[CHOSEN].append(means_by_shape(pools, chosen))
    lines = [f"Gathering questions: LoCoMo {gathering['locomo']} of {sum(p['shape'] == 'locomo' for p in pools)}, "
             f"LongMemEval {gathering['lme']} of {sum(p['shape'] == 'lme' for p in pools)}.", "",
             "| spread | LoCoMo R@5 | LoCoMo R@10 (seeds) | LoCoMo MRR | LME R@5 | LME R@10 (seeds) | LME MRR |",
             "|---|" + "---:|" * 6]
    for name, per_seed in table.items():
        values = np.array(per_seed)
        mean = values.mean(0)
        lines.append(f"| {name} | {mean[0]:.3f} | {mean[1]:.4f} ({', '.join(f'{v:.4f}' for v in values[:, 1])}) | "
                     f"{mean[2]:.3f} | {mean[3]:.3f} | {mean[4]:.4f} ({', '.join(f'{v:.4f}' for v in values[:, 4])}) | "
                     f"{mean[5]:.3f} |")
    lines += ["", "Settings chosen on the other folds:", *[f"- {c}" for c in choices]]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
