"""Retrain the learned ranking's trees on two shapes of conversation, validated held out.

LoCoMo dev (people talking to each other, short turns) and LongMemEval dev (a
person talking to an assistant, long answers split into parts, stored as
capture stores them, with ``metadata.role``): every question is asked through
``MemoryStore.recall`` as the two runners ask it (benchmarks/quality/locomo.py,
benchmarks/quality/longmemeval.py), with the learned component at weight 0, and its
candidate pool's features (``learned_rank.pool_features``, the role features
included) are recorded with a label per candidate: is it evidence.

The query delta is the packaged model's (trained on LoCoMo by
benchmarks/quality/train_learned_rank.py) and is kept: only the trees are retrained
here, so LoCoMo's held-out figures below have the delta in-sample (its own
held-out estimate is train_learned_rank.py's), and LongMemEval's do not.

Reported, all on pools asked in this run:

- the weighted score alone, and the packaged trees (the previous default);
- leave one dataset out: trees trained on LoCoMo only, scored on LongMemEval, and
  the reverse;
- folds held out within both: fold ``i`` is LoCoMo conversation ``i`` and every
  fifth LongMemEval instance; trees trained on both sets without the fold score it;
- the same folds without the thread spread (recall/thread_spread.py: every ranking here
  spreads a gathering question's first results across threads, as recall does), and without
  the role features (held at 0);
- the LongMemEval rows again on the instances the packaged trees were not trained on (the
  model's ``lme_ids``, or ``--seen-ids``), where comparing them with the held-out trees is fair.

``--write`` trains on every pool of both sets and saves the packaged model. ``--pools DIR``
keeps the recorded pools (pickles: give it a folder of your own) for the next run
(benchmarks/common/ranking_pools.py records them).

    pip install -e ".[embeddings,train]"
    python benchmarks/quality/train_rank_two_shapes.py [--lme-instances N] [--lme-ids A,B] [--pools DIR] [--recipe NAME]
        [--lme-weight N] [--seen-ids A,B] [--learned-top N] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import locomo, longmemeval  # noqa: E402
from benchmarks.common.number_options import whole_numbers  # noqa: E402
from benchmarks.common.training_recipes import add_recipe_arguments, apply_recipe  # noqa: E402
from benchmarks.quality import train_learned_rank as trl  # noqa: E402
# The pools (and their options) are ranking_pools.py's; the comparisons reach them through here too.
from benchmarks.common.ranking_pools import FOLDS, add_pool_arguments, record_all  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import learned_rank, thread_spread  # noqa: E402
from localmem.recall.speaker_roles import ROLE_FEATURES  # noqa: E402

KEYS = ("R@5", "R@10", "MRR")
LME_KEYS = ("R@5", "R@10", "MRR", "any@5", "all@5")


def pool_metrics(pool: dict, ranked: list[str]) -> dict[str, float]:
    """The runner's metrics of one pool's ranking: locomo.py's for LoCoMo, longmemeval.py's
    (turns, sessions) for LongMemEval."""
    truth = pool["truth"]
    if pool["shape"] == "locomo":
        return locomo.metrics(ranked, truth["evidence"])
    return longmemeval.metrics(ranked, truth["session_of"], truth["turns"], truth["sessions"])


def learned_scores(predict: Callable[[np.ndarray], np.ndarray] | None, pool: dict, weight: float,
                   cut: int = learned_rank.LEARNED_TOP) -> np.ndarray:
    """Weighted score plus the learned component, as recall adds it: to the ``cut`` best by
    weighted score only (recall's cut, LEARNED_TOP, unless a comparison names another)."""
    top = np.argsort(-pool["final"], kind="stable")[:cut]
    learned = np.zeros(len(pool["final"]))
    if predict is not None and len(top):
        learned[top] = 1.0 / (1.0 + np.exp(-np.clip(predict(pool["rows"][top]), -60, 60)))
    return pool["final"] + weight * learned


def ranked_keys(pool: dict, scores: np.ndarray, spread: bool | tuple[int, float] = True) -> list[str]:
    """The pool's keys in recall's order: by score, then (``spread``: recall's default when the
    trees rank; or (per thread, score gap) of one's own) a gathering question's first results
    spread across threads (recall/thread_spread.py)."""
    order = np.argsort(-scores, kind="stable").tolist()
    if spread and thread_spread.gathers(pool["question"]):
        threads = pool["threads"]
        setting = spread if isinstance(spread, tuple) else (thread_spread.PER_THREAD, thread_spread.SCORE_GAP)
        order = [order[i] for i in thread_spread.spread_order([float(scores[i]) for i in order],
                                                              [threads[i] for i in order], *setting)]
    return [pool["keys"][i] for i in order]


def scored(pool: dict, scores: np.ndarray, spread: bool | tuple[int, float] = True) -> dict[str, float]:
    return pool_metrics(pool, ranked_keys(pool, scores, spread))


def zeroed(rows: np.ndarray, names) -> np.ndarray:
    rows = rows.copy()
    rows[:, [learned_rank.FEATURES.index(n) for n in names]] = 0.0
    return rows


def weighted(pools: list[dict], lme_weight: int) -> list[dict]:
    """The pools training learns from: those with evidence (a pool without teaches no order),
    each LongMemEval one ``lme_weight`` times (a few dozen questions beside LoCoMo's 760)."""
    trainable = [p for p in pools if p["labels"].any()]
    return [p for p in trainable for _ in range(lme_weight if p["shape"] == "lme" else 1)]


def fit(pools: list[dict], args, drop=()) -> Callable[[np.ndarray], np.ndarray]:
    ranker = trl.fit([{**p, "rows": zeroed(p["rows"], drop)} for p in weighted(pools, args.lme_weight)],
                     args.rounds, args.seed, args.learning_rate, getattr(args, "params", None))
    return lambda rows: ranker.predict(zeroed(rows, drop), raw_score=True)


def fit_held_and_by_shape(training: list[dict], args) -> tuple[dict, dict]:
    """Trees for each fold trained without it, and trees for each shape trained on it alone
    (leave one dataset out), all on ``training``'s pools."""
    held = {fold: fit([p for p in training if p["fold"] != fold], args) for fold in range(FOLDS)}
    by_shape = {shape: fit([p for p in training if p["shape"] == shape], args) for shape in ("locomo", "lme")}
    return held, by_shape


def held_out_misses(pools: list[dict], instances: list[dict], predict_for: Callable[[dict], Any],
                    weight: float, cut: int = learned_rank.LEARNED_TOP) -> list[str]:
    """Each LongMemEval evidence turn the held-out trees leave out of the top 10: the question,
    and the turn's role, length, held-out rank and rank by weighted score alone, and its opening."""
    by_id = {i["question_id"]: i for i in instances}
    lines = []
    for pool in (p for p in pools if p["shape"] == "lme"):
        ranked = longmemeval.distinct(ranked_keys(pool, learned_scores(predict_for(pool), pool, weight, cut)))
        alone = longmemeval.distinct(ranked_keys(pool, pool["final"], spread=False))  # as recall without trees
        missed = sorted(t for t in pool["truth"]["turns"] if t not in ranked[:10])
        if not missed:
            continue
        instance = by_id[pool["id"]]
        lines.append(f"- {pool['id']} ({pool['kind']}): {instance['question']}")
        for key in missed:
            session, turn = map(int, key.split(":"))
            said = instance["haystack_sessions"][session][turn]
            rank = ranked.index(key) + 1 if key in ranked else "not in the pool"
            first = alone.index(key) + 1 if key in alone else "-"
            lines.append(f"  - turn {key}, {said['role']}, {len(said['content'])} characters, held-out rank {rank} "
                         f"(weighted score alone {first}): {said['content'][:100]!r}")
    return lines


def means(rows: list[dict], keys) -> list[float]:
    return [float(np.mean([r[k] for r in rows if k in r])) for k in keys]


def add_seed_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a comparison over several training seeds (relative_dates.py,
    query_delta_two_shapes.py)."""
    parser.add_argument("--seeds", default="0,1,2", type=whole_numbers(0), help="comma-separated LightGBM seeds")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.15)


def packaged_lme_ids(path: str | Path) -> list[str]:
    """The LongMemEval ids the model at ``path`` was trained on, as --write records them."""
    try:
        return list(json.loads(Path(path).read_text(encoding="utf-8")).get("lme_ids", []))
    except (OSError, ValueError):
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pool_arguments(parser)
    add_recipe_arguments(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="train on every pool and save the model")
    parser.add_argument("--misses", action="store_true",
                        help="list each LongMemEval evidence turn the held-out trees leave out of the top 10")
    parser.add_argument("--output", default=str(trl.MODEL_PATH))
    trl.add_cut_argument(parser)
    parser.add_argument("--seen-ids", default=None,
                        help="comma-separated LongMemEval ids the packaged trees were trained on (default: the "
                             "model's own list, lme_ids); the table is repeated on the other instances")
    args = apply_recipe(parser.parse_args(argv))
    if args.lme_weight < 1:
        parser.error("--lme-weight: must be at least 1")
    trl.check_cut(parser, args)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    pools, instances, packaged, delta = record_all(args, log)
    weight = Config().weight_learned
    old_columns = len(packaged.features)

    rankings: dict[str, dict[int, dict]] = {"FTS5 BM25 (same memories)": {i: p["bm25"] for i, p in enumerate(pools)}}

    def rank(label: str, predict_for: Callable[[dict], Any], spread: bool = True) -> None:
        rankings[label] = {i: scored(p, learned_scores(predict_for(p), p, weight, args.learned_top), spread)
                           for i, p in enumerate(pools)}

    rank("weighted score alone (LOCALMEM_LEARNED_RANK=0 with the delta's MaxSim)", lambda p: None, spread=False)
    rank("previous trees (packaged; in-sample on LoCoMo)",
         lambda p: lambda rows: packaged.raw_scores(np.ascontiguousarray(rows[:, :old_columns])))
    by_shape = {shape: fit([p for p in pools if p["shape"] == shape], args) for shape in ("locomo", "lme")}
    rank("trees trained on the other dataset only", lambda p: by_shape["lme" if p["shape"] == "locomo" else "locomo"])
    log("leave one dataset out done")
    for label, drop in (("trees on both, fold held out", ()),
                        ("trees on both, fold held out, no role features", ROLE_FEATURES)):
        held = {fold: fit([p for p in pools if p["fold"] != fold], args, drop) for fold in range(FOLDS)}
        rank(label, lambda p, held=held: held[p["fold"]])
        if not drop:
            held_out = held
            rank("trees on both, fold held out, no thread spread (LOCALMEM_THREAD_SPREAD=0)",
                 lambda p, held=held: held[p["fold"]], spread=False)
        log(f"{label} done")

    lines = ["| ranking | LoCoMo R@5 | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | LME turn R@10 | LME MRR | "
             "LME session any@5 | LME session all@5 |", "|---|" + "---:|" * 8]
    for label, metrics in rankings.items():
        loc = [metrics[i] for i, p in enumerate(pools) if p["shape"] == "locomo"]
        lme = [metrics[i] for i, p in enumerate(pools) if p["shape"] == "lme"]
        lines.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in means(loc, KEYS) + means(lme, LME_KEYS)) + " |")
    seen = set(args.seen_ids.split(",")) if args.seen_ids else set(packaged_lme_ids(trl.MODEL_PATH))
    unseen = [i for i, p in enumerate(pools) if p["shape"] == "lme" and p["id"] not in seen]
    if seen and unseen:  # the packaged trees are in-sample on the seen ones: compare on the others too
        lines += ["", f"LongMemEval questions the packaged trees were not trained on ({len(unseen)}):", "",
                  "| ranking | LME turn R@5 | LME turn R@10 | LME MRR | LME session any@5 | LME session all@5 |",
                  "|---|" + "---:|" * 5]
        for label, metrics in rankings.items():
            lines.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in means([metrics[i] for i in unseen],
                                                                                 LME_KEYS)) + " |")
    final_label = "trees on both, fold held out"
    lines += ["", f"By LongMemEval question type ({final_label}; turn R@10 / session any@5):", "",
              "| question type | n | BM25 | weighted score alone | previous trees | other dataset only | held out |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    labels = list(rankings)[1:]  # the learned rankings (BM25 first in the row)
    for kind in longmemeval.TYPES:
        chosen = [i for i, p in enumerate(pools) if p["shape"] == "lme" and p["kind"] == kind]
        if chosen:
            cells = [f"{np.mean([rankings[l][i]['R@10'] for i in chosen]):.3f} / "
                     f"{np.mean([rankings[l][i]['any@5'] for i in chosen]):.3f}"
                     for l in ["FTS5 BM25 (same memories)", *labels[:4]]]
            lines.append(f"| {kind} | {len(chosen)} | " + " | ".join(cells) + " |")
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines += ["", f"{len(pools) - n_lme} LoCoMo questions, {n_lme} LongMemEval questions "
              f"({len(instances)} instances, abstentions left out); {time.perf_counter() - started:.0f} s."]
    if args.misses:
        lines += ["", "LongMemEval evidence turns the held-out trees leave out of the top 10:", "",
                  *held_out_misses(pools, instances, lambda p: held_out[p["fold"]], weight, args.learned_top)]
    print("\n".join(lines))
    if args.write:
        ranker = trl.fit(weighted(pools, args.lme_weight), args.rounds, args.seed, args.learning_rate, args.params)
        settings = {**args.params, "n_estimators": args.rounds, "learning_rate": args.learning_rate,
                    "random_state": args.seed, "lme_weight": args.lme_weight, "recipe": args.recipe,
                    "learned_top": args.learned_top}
        if args.learned_top != learned_rank.LEARNED_TOP:
            print(f"note: measured with --learned-top {args.learned_top}; recall scores its LEARNED_TOP "
                  f"({learned_rank.LEARNED_TOP}) whatever the model file says")
        model = trl.export(ranker, list(packaged.embedders), settings, delta=delta)
        model["trained_on"] = (f"LoCoMo dev conversations 0-4 and {len(instances)} LongMemEval dev instances "
                               "(benchmarks/quality/train_rank_two_shapes.py); query delta from LoCoMo "
                               "(benchmarks/quality/train_learned_rank.py)")
        model["lme_ids"] = [i["question_id"] for i in instances]
        output = Path(args.output)
        output.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {output} ({output.stat().st_size:,} bytes, {len(model['trees'])} trees)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
