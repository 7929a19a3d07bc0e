"""A smaller candidate pool judged held out: the channels asked for fewer candidates.

Recall's vector channel asks for ``limit × vector_overfetch`` memories (80 at limit 20) and
its keyword channel for at least that and ``keyword_fetch`` (50); every candidate they find
is scored, read by the learned stage's pool features and kept as evidence for the answer's
confidence (benchmarks/speed/candidate_work.py counts ~136 a LoCoMo question). Each setting
``O`` (``vector_overfetch``) or ``O/K`` (and ``keyword_fetch`` K) records every pool again as
recall makes it with those sizes (benchmarks/common/ranking_pools.py, its cache keyed by the
configuration too), so each candidate's features are those of its own, smaller pool; so do
``keyword:N`` (the keyword channel asks for N) and ``first:N`` (the N best channel finds by
fused ranks go on), recall/candidate_pool.py's constants (in branch warm13's commit 80f611e only:
measured there, not shipped).

The trees are trained as train_rank_two_shapes.py trains them, on the pools of recall as it
is (the first setting given: the packaged model was trained on those), fold held out per seed,
and each fold's trees rank that fold's questions under every setting; likewise the
leave-one-dataset-out trees (trained on one set's pools as they are, ranking the other set's
under each setting). The learned component is added to the LEARNED_TOP best by weighted score,
as recall adds it. Reported per setting: the pool's median size, LoCoMo R@10 / MRR and
LongMemEval turn R@5 / R@10 / MRR / session any@5 per seed and their mean, and the questions
whose R@10 rose or fell against the first setting.

    python benchmarks/quality/pool_cut.py --pools DIR [--settings 4,3,2,keyword:30,first:90] [--seeds 0,1,2]

``--pools`` is read for the first setting and written for the others (copy a shared folder
first when it must stay as it is: a miss records there).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common import ranking_pools  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from benchmarks.quality.union_cut import union_scores  # noqa: E402
from benchmarks.speed.candidate_work import PoolSetting, setting_list  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall.learned_rank import LEARNED_TOP  # noqa: E402

COLUMNS = ("LoCoMo R@10", "LoCoMo MRR", "LME turn R@5", "LME turn R@10", "LME MRR", "LME session any@5")


def pools_with(args: argparse.Namespace, setting: PoolSetting, log) -> list[dict]:
    """Every pool recorded with ``setting``'s channel sizes. A configuration change is in the
    pool cache's keys; recall/candidate_pool.py's constants are not, so a setting that sets one
    keeps its pools in a folder of its own beside ``--pools``."""
    original = Config.from_env

    def from_env(environ=None) -> Config:
        return original(environ).with_changes(**dict(setting.config))

    folder = args.pools
    if setting.constants and folder:
        folder = f"{folder.rstrip('/')}-{setting.name.replace(':', '')}"
    ranking_pools.Config.from_env = from_env  # type: ignore[method-assign]
    setting.apply()
    try:
        pools, _, _, _ = ranking_pools.record_all(argparse.Namespace(**{**vars(args), "pools": folder}), log)
    finally:
        ranking_pools.Config.from_env = original  # type: ignore[method-assign]
        PoolSetting("as it is").apply()
    return pools


def figures(pools: list[dict], metrics: list[dict]) -> list[float]:
    locomo = [m for p, m in zip(pools, metrics) if p["shape"] == "locomo"]
    lme = [m for p, m in zip(pools, metrics) if p["shape"] == "lme"]
    return two_shapes.means(locomo, ("R@10", "MRR")) + two_shapes.means(lme, ("R@5", "R@10", "MRR", "any@5"))


def ranked_metrics(pools: list[dict], predict_for, weight: float) -> list[dict]:
    return [two_shapes.scored(p, union_scores(predict_for(p), p, weight, str(LEARNED_TOP))) for p in pools]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    parser.add_argument("--settings", type=setting_list, default=setting_list("4,3,2,2/30,1/20"),
                        help="pool settings (O, O/K, keyword:N, first:N; benchmarks/speed/candidate_work.py), "
                             "comma-separated; the first is recall as it is, the trees' training pools")
    parser.add_argument("--lme-weight", type=int, default=1)
    args = parser.parse_args(argv)
    if args.lme_weight < 1:
        parser.error("--lme-weight: must be at least 1")
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    settings = args.settings
    recorded = [pools_with(args, setting, log) for setting in settings]
    base = recorded[0]
    for setting, pools in zip(settings, recorded):
        if [(p["shape"], p.get("id"), p["fold"]) for p in pools] != [(p["shape"], p.get("id"), p["fold"])
                                                                     for p in base]:
            raise SystemExit(f"setting {setting.name}: its pools are not the first setting's questions")
    weight = Config().weight_learned
    held_rows: dict[int, list[list[float]]] = {i: [] for i in range(len(settings))}
    moved: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(settings))}
    other_rows: dict[int, list[list[float]]] = {i: [] for i in range(len(settings))}
    for seed in args.seeds:
        held, by_shape = two_shapes.fit_held_and_by_shape(base, argparse.Namespace(**{**vars(args), "seed": seed}))
        log(f"seed {seed}: trees fitted")
        first: list[float] = []
        for index, pools in enumerate(recorded):
            metrics = ranked_metrics(pools, lambda p: held[p["fold"]], weight)
            held_rows[index].append(figures(pools, metrics))
            recall = [m["R@10"] for m in metrics]
            if index == 0:
                first = recall
            moved[index].append((sum(a > b for a, b in zip(recall, first)), sum(a < b for a, b in zip(recall, first))))
            other = ranked_metrics(pools, lambda p: by_shape["lme" if p["shape"] == "locomo" else "locomo"], weight)
            other_rows[index].append(figures(pools, other))

    def cells(values: list[float], places: int = 3) -> str:
        return " | ".join(f"{v:.{places}f}" for v in values)

    lines = ["Trees trained on the first setting's pools, fold held out; LongMemEval's top 10 in distinct turns.",
             "", "| pool setting | pool, median LoCoMo / LME | seed | " + " | ".join(COLUMNS)
             + f" | questions with R@10 above {settings[0].name}'s | below |",
             "|---|---|---|" + "---:|" * (len(COLUMNS) + 2)]
    for index, (setting, pools) in enumerate(zip(settings, recorded)):
        sizes = (f"{np.median([len(p['final']) for p in pools if p['shape'] == 'locomo']):.0f} / "
                 f"{np.median([len(p['final']) for p in pools if p['shape'] == 'lme']):.0f}")
        for seed, values, (up, down) in zip(args.seeds, held_rows[index], moved[index]):
            lines.append(f"| {setting.name} | {sizes} | {seed} | {cells(values)} | {up} | {down} |")
        mean = np.mean(held_rows[index], axis=0).tolist()
        lines.append(f"| {setting.name} | | **mean** | {cells(mean, 4)} | | |")
    lines += ["", "Leave one dataset out (seed mean): LoCoMo's columns ranked by trees trained on LongMemEval's "
              "pools, LongMemEval's by trees trained on LoCoMo's.", "",
              "| pool setting | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for index, setting in enumerate(settings):
        lines.append(f"| {setting.name} | {cells(np.mean(other_rows[index], axis=0).tolist(), 4)} |")
    lines += ["", f"{sum(p['shape'] == 'locomo' for p in base)} LoCoMo questions, "
              f"{sum(p['shape'] == 'lme' for p in base)} LongMemEval questions; seeds "
              f"{','.join(map(str, args.seeds))}; {time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
