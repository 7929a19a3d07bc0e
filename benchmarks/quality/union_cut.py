"""The learned ranking's cut compared held out: how many candidates, and which, the trees score.

Recall's trees score the LEARNED_TOP (30) candidates best by weighted score
(recall/learned_rank.py); the rest keep their weighted score. LongMemEval's held-out misses
sit at ranks 14 to 200 of their pools, so a deeper cut (``45``) might bring some into the top
10, or let the trees lift wrong candidates from deeper down (LoCoMo's generic ranks 31-35,
branch top6). A union cut scores, besides the best ``top`` by weighted score, the ``k`` best
by each named feature column of the pool (``vector_rank``, ``keyword_rank``, ``cosine``,
``max_sim``, ``token_residual``, ...), and with ``thread`` each thread's best by weighted
score (its ``thread_gap`` 0; a memory without a thread is its own), and with ``threadtop:T``
every pool member of the ``T`` best threads (threads ranked by their best weighted score: the
sessions the question most likely concerns): a candidate one channel finds is scored even when
its weighted score ranks it lower.

A cut is written ``TOP[+FEATURE:K]...``, e.g. ``45``, ``30+cosine:10+keyword_rank:5``,
``30+thread`` or ``30+threadtop:2``; the first cut is the base the others are paired against, pool by pool,
with the same trees (trained as train_rank_two_shapes.py trains them, on every candidate
of every pool, unless ``--train-on-cut``: each cut's trees trained on the candidates it
scores). Reported beside BM25 and the weighted score alone of the same pools: held out by
fold per seed and its mean, both leave-one-dataset-out directions, LongMemEval misses
brought in and pushed out, LoCoMo questions raised and lowered, the cut chosen for each
fold on the other four folds (by the sum of both sets' mean R@10; ties to the first cut),
and with ``--signals`` each of the base's held-out misses ranked by every signal in its
pool. (It replaces learned_top_cut.py, which compared plain cuts only.)

    python benchmarks/quality/union_cut.py --pools DIR [--cuts 30,45,30+cosine:10,...] [--seeds 0,1,2]
        [--train-on-cut] [--signals]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.number_options import joined  # noqa: E402
from benchmarks.quality import longmemeval  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall.learned_rank import FEATURES  # noqa: E402

# Signals ranked by --signals for each missed turn (feature columns, higher is better).
SIGNALS = ("final", "vector", "keyword", "cosine", "max_sim", "best_token", "token_residual",
           "share_over_half", "median_token", "thread_best", "prev_final", "next_final")


def read_cut(text: str) -> tuple[int, tuple[tuple[str, int], ...]]:
    """``TOP[+FEATURE:K]...`` as (top, ((feature, k), ...)); ``thread`` has k 0 (every thread),
    ``threadtop:T`` k ``T`` (every member of the T best threads)."""
    head, *parts = text.split("+")
    try:
        top = int(head)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a cut starts with a whole number (got {text!r})") from None
    if top < 1:
        raise argparse.ArgumentTypeError(f"a cut scores at least 1 by weighted score (got {text!r})")
    reach = []
    for part in parts:
        name, _, count = part.partition(":")
        if name == "thread" and not count:
            reach.append(("thread", 0))
            continue
        if name not in FEATURES and name != "threadtop":
            raise argparse.ArgumentTypeError(f"{name!r} is no feature column (cut {text!r})")
        if not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(f"{part!r}: FEATURE:K with K at least 1 (cut {text!r})")
        reach.append((name, int(count)))
    return top, tuple(reach)


def cut_list(text: str) -> list[str]:
    cuts = [part.strip() for part in text.split(",") if part.strip()]
    for cut in cuts:
        read_cut(cut)
    if not cuts:
        raise argparse.ArgumentTypeError("at least one cut")
    return cuts


def scored_positions(pool: dict, cut: str) -> np.ndarray:
    """The pool positions the trees score under ``cut``, in weighted-score order."""
    top, reach = read_cut(cut)
    rows = np.nan_to_num(pool["rows"], nan=0.0, posinf=0.0, neginf=0.0)
    order = np.argsort(-pool["final"], kind="stable")
    chosen = np.zeros(len(order), dtype=bool)
    chosen[order[:top]] = True
    for name, count in reach:
        if name == "thread":  # each thread's best by weighted score (a memory without a thread is its own)
            chosen |= rows[:, FEATURES.index("thread_gap")] >= 0
            continue
        if name == "threadtop":  # every member of the ``count`` best threads by their best weighted score
            chosen |= thread_places(pool["final"], pool["threads"])[0] <= count
            continue
        chosen[np.argsort(-rows[:, FEATURES.index(name)], kind="stable")[:count]] = True
    return order[chosen[order]]


def thread_places(final: np.ndarray, threads: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate: its thread's place among the pool's threads by each thread's best weighted
    score, its place inside its thread by weighted score (both 1 = best; ties in pool order) and
    its thread's member count in the pool."""
    thread_place: dict = {}
    seen: dict = {}
    inside = np.zeros(len(final))
    for position in np.argsort(-np.asarray(final), kind="stable").tolist():
        thread = threads[position]
        thread_place.setdefault(thread, len(thread_place) + 1)
        seen[thread] = seen.get(thread, 0) + 1
        inside[position] = seen[thread]
    return (np.array([float(thread_place[t]) for t in threads]), inside,
            np.array([float(seen[t]) for t in threads]))


def union_scores(predict, pool: dict, weight: float, cut: str) -> np.ndarray:
    """Weighted score plus the learned component on the cut's positions only (as recall adds it)."""
    learned = np.zeros(len(pool["final"]))
    positions = scored_positions(pool, cut)
    if predict is not None and len(positions):
        learned[positions] = 1.0 / (1.0 + np.exp(-np.clip(predict(pool["rows"][positions]), -60, 60)))
    return pool["final"] + weight * learned


def missed_turns(pool: dict, scores: np.ndarray) -> set[str]:
    ranked = longmemeval.distinct(two_shapes.ranked_keys(pool, scores))
    return {t for t in pool["truth"]["turns"] if t not in ranked[:10]}


def cut_rows(pools: list[dict], predict_for, weight: float, cut: str) -> tuple[list[dict], set, list[int]]:
    """Each pool's metrics under ``cut``, the LongMemEval misses and how many candidates were scored."""
    metrics, misses, scored_counts = [], set(), []
    for index, pool in enumerate(pools):
        scores = union_scores(predict_for(pool), pool, weight, cut)
        metrics.append(two_shapes.scored(pool, scores))
        scored_counts.append(len(scored_positions(pool, cut)))
        if pool["shape"] == "lme":
            misses |= {(index, turn) for turn in missed_turns(pool, scores)}
    return metrics, misses, scored_counts


def subset(pool: dict, cut: str) -> dict:
    positions = scored_positions(pool, cut)
    return {**pool, "rows": pool["rows"][positions], "labels": pool["labels"][positions]}


def fitted(pools: list[dict], settings: argparse.Namespace, cut: str | None) -> tuple[dict, dict]:
    training = pools if cut is None else [subset(p, cut) for p in pools]
    return two_shapes.fit_held_and_by_shape(training, settings)


def signal_lines(pools: list[dict], predict_for, weight: float, cut: str) -> list[str]:
    """Each missed LongMemEval turn under ``cut``: its best part's rank in the pool by every signal."""
    lines = ["| question | turn | " + " | ".join(SIGNALS) + " | thread's best? | pool |",
             "|---|---|" + "---:|" * (len(SIGNALS) + 2)]
    for pool in (p for p in pools if p["shape"] == "lme"):
        scores = union_scores(predict_for(pool), pool, weight, cut)
        for turn in sorted(missed_turns(pool, scores)):
            parts = [i for i, key in enumerate(pool["keys"]) if key == turn]
            if not parts:
                lines.append(f"| {pool['id']} | {turn} | not in the pool |")
                continue
            ranks = []
            for name in SIGNALS:
                column = np.nan_to_num(pool["rows"][:, FEATURES.index(name)])
                order = np.argsort(-column, kind="stable").tolist()
                ranks.append(min(order.index(i) for i in parts) + 1)
            gap = pool["rows"][parts, FEATURES.index("thread_gap")]
            lines.append(f"| {pool['id']} | {turn} | " + " | ".join(map(str, ranks))
                         + f" | {'yes' if (gap >= 0).any() else 'no'} | {len(pool['final'])} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    parser.add_argument("--cuts", default="30,30+cosine:10,30+keyword_rank:10,30+vector_rank:10", type=cut_list,
                        help="comma-separated cuts TOP[+FEATURE:K]...; the first is the base")
    parser.add_argument("--train-on-cut", action="store_true",
                        help="train each cut's trees on the candidates it scores (features still of the whole pool)")
    parser.add_argument("--signals", action="store_true",
                        help="rank each of the base's held-out misses (first seed) by every signal")
    parser.add_argument("--lme-weight", type=int, default=1)
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

    def figures(metrics: list[dict], chosen: list[int] | None = None) -> list[float]:
        keep = set(range(len(pools))) if chosen is None else set(chosen)
        return (two_shapes.means([metrics[i] for i in shapes["locomo"] if i in keep], ("R@10", "MRR"))
                + two_shapes.means([metrics[i] for i in shapes["lme"] if i in keep], ("R@5", "R@10", "MRR", "any@5")))

    held_rows: dict[str, list[tuple]] = {cut: [] for cut in cuts}
    other_rows: dict[str, list[list[float]]] = {cut: [] for cut in cuts}
    chosen_rows: list[tuple] = []
    sizes: dict[str, list[int]] = {}
    extra_lines: list[str] = []
    for seed in seeds:
        settings = argparse.Namespace(**{**vars(args), "seed": seed})
        first_misses: set = set()
        first_recall: list[float] = []
        per_cut: dict[str, list[dict]] = {}
        for cut in cuts:
            if cut == cuts[0] or args.train_on_cut:
                held, by_shape = fitted(pools, settings, cut if args.train_on_cut else None)
                log(f"seed {seed}: trees fitted" + (f" on {cut}" if args.train_on_cut else ""))
            metrics, misses, counts = cut_rows(pools, lambda p: held[p["fold"]], weight, cut)
            per_cut[cut] = metrics
            sizes[cut] = counts
            recall = [metrics[i]["R@10"] for i in shapes["locomo"]]
            if cut == cuts[0]:
                first_misses, first_recall = misses, recall
                if args.signals and seed == seeds[0]:
                    extra_lines = signal_lines(pools, lambda p: held[p["fold"]], weight, cut)
            held_rows[cut].append((seed, figures(metrics), len(misses), len(first_misses - misses),
                                   len(misses - first_misses), sum(a > b for a, b in zip(recall, first_recall)),
                                   sum(a < b for a, b in zip(recall, first_recall))))
            other, _, _ = cut_rows(pools, lambda p: by_shape["lme" if p["shape"] == "locomo" else "locomo"],
                                   weight, cut)
            other_rows[cut].append(figures(other))
            log(f"seed {seed}: {cut} scored")
        # The cut chosen for each fold on the other four folds' held-out scores.
        picked, combined = [], [None] * len(pools)
        for fold in range(two_shapes.FOLDS):
            rest = [i for i, p in enumerate(pools) if p["fold"] != fold]
            value = {cut: float(np.nansum(np.array(figures(per_cut[cut], rest))[[0, 3]])) for cut in cuts}
            best = max(cuts, key=lambda c: (value[c] - 1e-12 * cuts.index(c)))
            picked.append(best)
            for i, p in enumerate(pools):
                if p["fold"] == fold:
                    combined[i] = per_cut[best][i]
        chosen_rows.append((seed, figures(combined), picked))

    def cells(values: list[float]) -> str:
        return " | ".join(f"{v:.3f}" for v in values)

    trained = "each cut's trees trained on what it scores" if args.train_on_cut else "trained on every candidate"
    lines = [f"Trees on both sets ({trained}), fold held out; the top 10 counted in distinct turns (LongMemEval).", "",
             "| cut | candidates scored, median LoCoMo / LME | seed | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | "
             f"LME turn R@10 | LME MRR | LME session any@5 | LME misses | of {cuts[0]}'s misses brought in | "
             f"of its hits pushed out | LoCoMo questions with R@10 above {cuts[0]}'s | below |",
             "|---|---|---|" + "---:|" * 11,
             "| | | FTS5 BM25 (same memories) | " + cells(figures([p["bm25"] for p in pools])) + " | | | | | |",
             "| | | weighted score alone | "
             + cells(figures([two_shapes.scored(p, p["final"], spread=False) for p in pools])) + " | | | | | |"]
    for cut in cuts:
        scored_median = (f"{np.median([sizes[cut][i] for i in shapes['locomo']]):.0f} / "
                         f"{np.median([sizes[cut][i] for i in shapes['lme']]):.0f}")
        for seed, values, *counts in held_rows[cut]:
            lines.append(f"| {cut} | {scored_median} | {seed} | {cells(values)} | "
                         + " | ".join(map(str, counts)) + " |")
        mean = np.mean([row[1] for row in held_rows[cut]], axis=0).tolist()
        counts = np.mean([row[2:] for row in held_rows[cut]], axis=0)
        lines.append(f"| {cut} | | **mean** | {cells(mean)} | " + " | ".join(f"{c:.1f}" for c in counts) + " |")
    lines += ["", "Held-out means over the seeds to four places (LoCoMo R@10 / LME turn R@10 / LME any@5 lowest "
              "seed): " + "; ".join(
                  f"{cut} {np.mean([row[1][0] for row in held_rows[cut]]):.4f} / "
                  f"{np.mean([row[1][3] for row in held_rows[cut]]):.4f} / "
                  f"{min(row[1][5] for row in held_rows[cut]):.3f}" for cut in cuts) + "."]
    lines += ["", "The cut chosen for each fold on the other four (sum of both sets' mean R@10, ties to the first):",
              "",
              "| seed | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | LME turn R@10 | LME MRR | LME session any@5 | "
              "folds chose |", "|---|" + "---:|" * 6 + "---|"]
    for seed, values, picked in chosen_rows:
        lines.append(f"| {seed} | {cells(values)} | {', '.join(picked)} |")
    mean = np.mean([row[1] for row in chosen_rows], axis=0).tolist()
    lines.append(f"| **mean** | {cells(mean)} | |")
    lines += ["", "Leave one dataset out (trees on the other set only; seed mean): LoCoMo's columns are trees "
              "trained on LongMemEval, LongMemEval's trees trained on LoCoMo.", "",
              "| cut | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | LME turn R@10 | LME MRR | LME session any@5 |",
              "|---|" + "---:|" * 6]
    for cut in cuts:
        lines.append(f"| {cut} | " + " | ".join(f"{v:.4f}" for v in np.mean(other_rows[cut], axis=0).tolist()) + " |")
    if extra_lines:
        lines += ["", f"The held-out misses of {cuts[0]} (seed {seeds[0]}): rank of the turn's best part in its pool "
                  "by each signal (1 = the pool's best):", "", *extra_lines]
    lines += ["", f"{len(shapes['locomo'])} LoCoMo questions, {len(shapes['lme'])} LongMemEval questions "
              f"({len(instances)} instances, abstentions left out); seeds {joined(seeds)}; "
              f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
