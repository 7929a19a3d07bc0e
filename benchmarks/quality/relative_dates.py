"""Relative dates in the question (LOCALMEM_QUERY_RELATIVE_DATES), held out on both dev sets.

Records every LoCoMo and LongMemEval dev pool twice, with relative dates off and on
(train_rank_two_shapes.py's recording, the same folds), and for each LightGBM seed trains
the trees on both sets without each fold and scores the fold. Reported: the held-out
R@5 / R@10 / MRR of both sets per seed and their mean, the pools the reading changed (a
relative period read, and whether any of the pool falls in it), and which questions'
held-out R@10 moved between off and on, and whether they are among the changed pools: a
change that lands on questions without a date comes from the retrained trees, not from the
dates. ``--locomo-asked-at last-session`` asks LoCoMo's questions at each conversation's last
session (benchmarks/quality/locomo.py).

    python benchmarks/quality/relative_dates.py [--pools DIR] [--seeds 0,1,2] [--locomo-asked-at today|last-session]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import learned_rank  # noqa: E402

DISTANCE = learned_rank.FEATURES.index("date_distance")


def recorded(args: argparse.Namespace, relative: bool) -> list[dict]:
    """Every pool, asked with relative dates ``relative`` (the setting is read from the environment)."""
    previous = os.environ.get("LOCALMEM_QUERY_RELATIVE_DATES")
    os.environ["LOCALMEM_QUERY_RELATIVE_DATES"] = "1" if relative else "0"
    try:
        return two_shapes.record_all(args, lambda line: None)[0]
    finally:
        if previous is None:
            del os.environ["LOCALMEM_QUERY_RELATIVE_DATES"]
        else:
            os.environ["LOCALMEM_QUERY_RELATIVE_DATES"] = previous


def held_out(pools: list[dict], seed: int, args: argparse.Namespace) -> list[dict]:
    """Each pool's metrics under trees trained (with ``seed``) on the other folds of both sets."""
    settings = argparse.Namespace(lme_weight=1, rounds=args.rounds, seed=seed, learning_rate=args.learning_rate)
    trees = {fold: two_shapes.fit([p for p in pools if p["fold"] != fold], settings)
             for fold in range(two_shapes.FOLDS)}
    weight = Config().weight_learned
    return [two_shapes.scored(p, two_shapes.learned_scores(trees[p["fold"]], p, weight)) for p in pools]


def row(pools: list[dict], metrics: list[dict]) -> list[float]:
    by_shape = [[m for m, p in zip(metrics, pools) if p["shape"] == shape] for shape in ("locomo", "lme")]
    return [value for rows in by_shape for value in two_shapes.means(rows, two_shapes.KEYS)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    args = parser.parse_args(argv)
    seeds = args.seeds
    off, on = recorded(args, False), recorded(args, True)
    changed = [i for i, (a, b) in enumerate(zip(off, on))
               if a["keys"] != b["keys"] or not np.array_equal(a["rows"], b["rows"])]
    lines = [f"LoCoMo asked {args.locomo_asked_at}; pools the relative reading changed: {len(changed)}", "",
             "| set | question | type | pool | days from the period | pool in the period | evidence in it |",
             "|---|---|---|---:|---:|---:|---:|"]
    for i in changed:
        days = on[i]["rows"][:, DISTANCE]
        lines.append(f"| {on[i]['shape']} | {on[i].get('id', i)} | {on[i]['kind']} | {len(on[i]['keys'])} | "
                     f"{np.expm1(days.min()):.0f} | {int((days == 0).sum())} | "
                     f"{int(((days == 0) & (on[i]['labels'] > 0)).sum())} |")
    lines += ["", "| relative dates | seed | LoCoMo R@5 | LoCoMo R@10 | LoCoMo MRR | LME R@5 | LME R@10 | LME MRR |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    first: dict[str, list[dict]] = {}
    for label, pools in (("off", off), ("on", on)):
        rows = []
        for seed in seeds:
            metrics = held_out(pools, seed, args)
            first.setdefault(label, metrics)
            rows.append(row(pools, metrics))
            lines.append(f"| {label} | {seed} | " + " | ".join(f"{v:.4f}" for v in rows[-1]) + " |")
        lines.append(f"| {label} | mean | " + " | ".join(f"{v:.4f}" for v in np.mean(rows, axis=0)) + " |")
    lines += ["", f"Questions whose held-out R@10 moved from off to on (seed {seeds[0]}):", ""]
    for shape in ("locomo", "lme"):
        moved = [i for i, p in enumerate(on) if p["shape"] == shape
                 and first["off"][i]["R@10"] != first["on"][i]["R@10"]]
        total = sum(first["on"][i]["R@10"] - first["off"][i]["R@10"] for i in moved)
        dated = [i for i in moved if i in changed]
        lines.append(f"- {shape}: {len(moved)} moved, by {total:+.2f} evidence shares in all; {len(dated)} of them "
                     f"read a relative period (by {sum(first['on'][i]['R@10'] - first['off'][i]['R@10'] for i in dated):+.2f})")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
