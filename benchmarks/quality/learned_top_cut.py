"""How far down the pool the learned ranking should reach: its cut (LEARNED_TOP) compared held out.

Recall's trees score only the LEARNED_TOP candidates best by weighted score
(recall/learned_rank.py); the rest keep their weighted score. LongMemEval's held-out
misses sit at ranks 14 to 200 of their pools, so a deeper cut might bring some into
the top 10, or let the trees lift wrong candidates from deeper down.

The pools are train_rank_two_shapes.py's (LoCoMo dev and LongMemEval dev, recorded with
the learned component at weight 0; ``--pools DIR`` reuses them). Per training seed the
trees are fitted once, as train_rank_two_shapes.py fits them (on every candidate of
every pool): five times with a fold held out, and once per dataset for leave one dataset
out. That training does not depend on the cut, so each cut applies the same trees to its own
top: the comparison between cuts is paired, pool by pool. BM25 is of the same run.

Reported per cut: the held-out figures per seed and their mean, leave one dataset out
both ways, and the LongMemEval evidence turns outside the top 10 (distinct turns, as
``--misses`` counts them), with how many of the first cut's misses each cut brings in
and how many of its hits it pushes out, and how many LoCoMo questions' R@10 each cut raises or
lowers against the first's.

``--train-on-cut`` trains each cut's trees on its own top only (the rows they score), for the
comparison with trees trained on every candidate.

    python benchmarks/quality/learned_top_cut.py [--cuts 30,45,60,90] [--seeds 0,1,2] [--pools DIR] [--train-on-cut]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.number_options import joined, whole_numbers  # noqa: E402
from benchmarks.quality import longmemeval  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402


def missed_turns(pool: dict, scores: np.ndarray) -> set[str]:
    """The pool's LongMemEval evidence turns outside the top 10 distinct turns."""
    ranked = longmemeval.distinct(two_shapes.ranked_keys(pool, scores))
    return {t for t in pool["truth"]["turns"] if t not in ranked[:10]}


def cut_rows(pools: list[dict], predict_for, weight: float, cut: int) -> tuple[list[dict], set[tuple[int, str]]]:
    """Each pool's metrics with the trees scoring ``cut`` candidates, and the LongMemEval misses."""
    metrics, misses = [], set()
    for index, pool in enumerate(pools):
        scores = two_shapes.learned_scores(predict_for(pool), pool, weight, cut)
        metrics.append(two_shapes.scored(pool, scores))
        if pool["shape"] == "lme":
            misses |= {(index, turn) for turn in missed_turns(pool, scores)}
    return metrics, misses


def top_only(pool: dict, cut: int) -> dict:
    """The pool's ``cut`` best by weighted score, for training (their feature rows as recorded)."""
    top = np.argsort(-pool["final"], kind="stable")[:cut]
    return {**pool, "rows": pool["rows"][top], "labels": pool["labels"][top]}


def fitted(pools: list[dict], settings: argparse.Namespace, cut: int | None) -> tuple[dict, dict]:
    """The held-out trees by fold and the trees by shape (for leave one dataset out), trained on
    every candidate, or (``cut``) on each pool's top ``cut`` only."""
    training = pools if cut is None else [top_only(p, cut) for p in pools]
    return two_shapes.fit_held_and_by_shape(training, settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    parser.add_argument("--cuts", default="30,45,60,90", type=whole_numbers(1),
                        help="comma-separated cuts; moves into and out of the top 10 are counted against the first")
    parser.add_argument("--train-on-cut", action="store_true",
                        help="train each cut's trees on its own top only (the rows they will score; features still "
                             "measured against the whole pool) instead of once on every candidate")
    parser.add_argument("--lme-weight", type=int, default=1,
                        help="each LongMemEval pool counts this many times in training (at least 1)")
    args = parser.parse_args(argv)
    cuts, seeds = args.cuts, args.seeds
    if args.lme_weight < 1:
        parser.error("--lme-weight: must be at least 1")
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    pools, instances, _, _ = two_shapes.record_all(args, log)
    weight = Config().weight_learned
    shapes = {shape: [i for i, p in enumerate(pools) if p["shape"] == shape] for shape in ("locomo", "lme")}
    sizes = {shape: np.median([len(pools[i]["final"]) for i in chosen]) for shape, chosen in shapes.items()}

    def figures(metrics: list[dict]) -> list[float]:
        return (two_shapes.means([metrics[i] for i in shapes["locomo"]], ("R@10", "MRR"))
                + two_shapes.means([metrics[i] for i in shapes["lme"]], ("R@5", "R@10", "MRR", "any@5")))

    bm25 = figures([p["bm25"] for p in pools])
    alone = figures([two_shapes.scored(p, p["final"], spread=False) for p in pools])
    held_rows: dict[int, list[tuple]] = {cut: [] for cut in cuts}
    other_rows: dict[int, list[list[float]]] = {cut: [] for cut in cuts}
    for seed in seeds:
        settings = argparse.Namespace(**{**vars(args), "seed": seed})
        first_misses: set[tuple[int, str]] = set()
        first_recall: list[float] = []
        for cut in cuts:
            if cut == cuts[0] or args.train_on_cut:
                held, by_shape = fitted(pools, settings, cut if args.train_on_cut else None)
                log(f"seed {seed}: trees fitted" + (f" on the top {cut}" if args.train_on_cut else ""))
            metrics, misses = cut_rows(pools, lambda p: held[p["fold"]], weight, cut)
            recall = [metrics[i]["R@10"] for i in shapes["locomo"]]
            if cut == cuts[0]:
                first_misses, first_recall = misses, recall
            held_rows[cut].append((seed, figures(metrics), len(misses), len(first_misses - misses),
                                   len(misses - first_misses), sum(a > b for a, b in zip(recall, first_recall)),
                                   sum(a < b for a, b in zip(recall, first_recall))))
            other, _ = cut_rows(pools, lambda p: by_shape["lme" if p["shape"] == "locomo" else "locomo"],
                                weight, cut)
            other_rows[cut].append(figures(other))

    def cells(values: list[float]) -> str:
        return " | ".join(f"{v:.3f}" for v in values)

    trained = "each cut's trees trained on its own top" if args.train_on_cut else "trained on every candidate"
    lines = [f"Trees on both sets ({trained}), fold held out; the top 10 counted in distinct turns (LongMemEval); median pool "
             f"{sizes['locomo']:.0f} candidates (LoCoMo), {sizes['lme']:.0f} (LongMemEval).", "",
             "| cut | seed | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | LME turn R@10 | LME MRR | LME session any@5 | "
             f"LME misses | of cut {cuts[0]}'s misses brought in | of its hits pushed out | "
             f"LoCoMo questions with R@10 above cut {cuts[0]}'s | below |",
             "|---:|---|" + "---:|" * 11,
             "| | FTS5 BM25 (same memories) | " + cells(bm25) + " | | | | | |",
             "| | weighted score alone | " + cells(alone) + " | | | | | |"]
    for cut in cuts:
        for seed, values, *counts in held_rows[cut]:
            lines.append(f"| {cut} | {seed} | {cells(values)} | " + " | ".join(map(str, counts)) + " |")
        mean = np.mean([row[1] for row in held_rows[cut]], axis=0).tolist()
        counts = np.mean([row[2:] for row in held_rows[cut]], axis=0)
        lines.append(f"| {cut} | **mean** | {cells(mean)} | " + " | ".join(f"{c:.1f}" for c in counts) + " |")
    # The shipping rule compares three-seed means a table's third place can hide.
    lines += ["", "Held-out means over the seeds to four places (LoCoMo R@10 / LME turn R@10): " + "; ".join(
        f"cut {cut} {np.mean([row[1][0] for row in held_rows[cut]]):.4f} / "
        f"{np.mean([row[1][3] for row in held_rows[cut]]):.4f}" for cut in cuts) + "."]
    lines += ["", "Leave one dataset out (trees on the other set only; seed mean): LoCoMo's columns are trees "
              "trained on LongMemEval, LongMemEval's trees trained on LoCoMo.", "",
              "| cut | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | LME turn R@10 | LME MRR | LME session any@5 |",
              "|---:|" + "---:|" * 6]
    for cut in cuts:
        lines.append(f"| {cut} | " + cells(np.mean(other_rows[cut], axis=0).tolist()) + " |")
    lines += ["", f"{len(shapes['locomo'])} LoCoMo questions, {len(shapes['lme'])} LongMemEval questions "
              f"({len(instances)} instances, abstentions left out); seeds {joined(seeds)}; "
              f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
