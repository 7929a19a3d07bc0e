"""What the learned ranking's trees see of threads, compared held out: a thread cut and thread features.

A thread is a conversation session (LongMemEval: a session; LoCoMo: a conversation's session);
recall knows each candidate's (recall/thread_spread.py). LongMemEval's held-out misses sit at
weighted-score ranks past the LEARNED_TOP (30) the trees score. Three levers, all computed from
the recorded pools (train_rank_two_shapes.py's, ``--pools``), so nothing is recorded again:

- ``--threads``: where each held-out miss of the base variant (first seed) sits by thread: its
  thread's place among the pool's threads (threads ranked by their best weighted score), its
  place inside its thread, its thread's pool members, and its place by weighted score;
- a thread-member cut, ``30+threadtop:T`` (union_cut.py's part): besides the 30 best by weighted
  score, the trees also score every pool member of the ``T`` best threads;
- thread features (THREAD_COLUMNS) the trees lack, added as extra columns after the pool's
  FEATURES row at training time: the candidate's thread's place, its place inside its thread, its
  thread's pool members, its thread's members among the pool's 10 best by weighted score, and its
  thread's second-best weighted score less the pool's best. Each reads the pool only (scores and
  thread ids), so it means the same on any store;
- session features (``/insession``): each of SESSION_SIGNALS less its best among the candidate's
  thread's pool members: the turn against its own session rather than against the pool;
- session features below the leader (``/belowleader``): the same columns, but the thread's leader (its
  member with the best weighted score, ties by pool order) gets a lone member's value (0) in each, so the
  trees see a leader as a candidate of a one-member thread and the columns describe only members below it.

A variant is written ``CUT[/threads][/insession][/belowleader][/oncut][/ff=X][/leaf=N]``: a union cut
(union_cut.py's syntax), with the thread features (``/threads``), the session features (``/insession``; below
the leader: ``/belowleader``), with its trees
trained on the candidates it scores (``/oncut``; otherwise on every candidate of every pool), and with a
regularisation over the recipe's LightGBM settings: ``ff`` the share of columns each tree sees
(feature_fraction, the recipe's 0.8), ``leaf`` the fewest rows a leaf holds (min_data_in_leaf, 50). The
first variant is the base the others are paired against, seed by seed. Each variant's trees are
trained per seed (``--members K``: each "seed" s is the group of K seeds s*K .. s*K+K-1, their
raw scores averaged, as seed_ensemble.py's groups)
and judged held out by fold (fold i: LoCoMo conversation i and every fifth LongMemEval instance;
trees on both sets without it) and across (trees on one set only, scoring the other), in recall's
order (weighted score plus the learned component on the cut's positions, a gathering question
spread across threads). Reported per set: R@1, R@2 (rank_recipes.py's: LongMemEval in distinct
turns), MRR, R@10, and LongMemEval's turn R@5 and session any@5; the LongMemEval misses brought in
and pushed out against the base, and LoCoMo questions whose R@10 rose or fell.

    python benchmarks/quality/thread_levers.py --pools DIR [--variants 30,30+threadtop:2,30/threads,...]
        [--seeds 0,1,2] [--members K] [--threads]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.number_options import joined, whole_number  # noqa: E402
from benchmarks.quality import longmemeval, rank_recipes, union_cut  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall.learned_rank import FEATURES  # noqa: E402

THREAD_COLUMNS = ("thread_place", "place_in_thread", "thread_members", "thread_in_top10", "thread_second_gap")
TOP_SHARE = 10
LOCOMO_KEYS = ("R@1", "R@2", "MRR", "R@10")
LME_KEYS = ("R@1", "R@2", "R@5", "R@10", "MRR", "any@5")
# /insession: each signal less its best over the candidate's thread (the turn against its own session)
SESSION_SIGNALS = ("cosine", "max_sim", "best_token", "keyword", "token_residual")
FLAGS = ("threads", "insession", "belowleader", "oncut")
COLUMN_FLAGS = frozenset({"threads", "insession", "belowleader"})
# ``/NAME=VALUE``: a LightGBM setting over the recipe's (train_learned_rank.PARAMS), for the trees whose
# columns grow: ``ff`` the share of columns a tree sees (feature_fraction), ``leaf`` the fewest rows a
# leaf holds (min_data_in_leaf)
PARAM_FLAGS = {"ff": ("colsample_bytree", float), "leaf": ("min_child_samples", int)}


def thread_columns(final: np.ndarray, threads: list) -> np.ndarray:
    """THREAD_COLUMNS per candidate, from the pool's weighted scores and thread ids only."""
    final = np.asarray(final, dtype=float)
    n = len(final)
    if n == 0:
        return np.zeros((0, len(THREAD_COLUMNS)))
    place, inside, members = union_cut.thread_places(final, threads)
    top = set(np.argsort(-final, kind="stable")[:TOP_SHARE].tolist())
    in_top: dict = {}
    second: dict = {}
    for position in np.argsort(-final, kind="stable").tolist():
        thread = threads[position]
        in_top[thread] = in_top.get(thread, 0) + (position in top)
        if inside[position] == 2:
            second[thread] = final[position]
    lowest, best = final.min(), final.max()
    return np.column_stack([place, inside, members, [float(in_top[t]) for t in threads],
                            [second.get(t, lowest) - best for t in threads]])


def read_param(flag: str, variant: str) -> tuple[str, float | int]:
    """A ``NAME=VALUE`` flag as (LightGBM setting, value): ``ff`` in (0, 1], ``leaf`` a whole number ≥ 1."""
    name, _, text = flag.partition("=")
    setting, kind = PARAM_FLAGS[name]
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or (name == "ff" and not 0 < value <= 1) or (name == "leaf" and value < 1):
        bound = "a share in (0, 1]" if name == "ff" else "a whole number of rows ≥ 1"
        raise argparse.ArgumentTypeError(f"{name}={text!r} is not {bound} (variant {variant!r})")
    return setting, value


def read_variant(text: str) -> tuple[str, frozenset[str]]:
    """``CUT[/threads][/insession][/belowleader][/oncut][/ff=X][/leaf=N]`` as (cut, flags); refused in words
    when bad."""
    cut, *flags = text.split("/")
    union_cut.read_cut(cut)
    unknown = [f for f in flags if f not in FLAGS and f.partition("=")[0] not in PARAM_FLAGS]
    if unknown:
        known = ", ".join([*FLAGS, *(f"{name}=VALUE" for name in PARAM_FLAGS)])
        raise argparse.ArgumentTypeError(f"{'/'.join(unknown)!r} is no variant flag (known: {known}; "
                                         f"variant {text!r})")
    params = [read_param(f, text)[0] for f in flags if "=" in f]
    if len(set(params)) < len(params):
        raise argparse.ArgumentTypeError(f"a LightGBM setting given twice in variant {text!r}")
    return cut, frozenset(flags)


def tree_params(flags: frozenset[str]) -> dict:
    """The LightGBM settings a variant's ``NAME=VALUE`` flags put over the recipe's."""
    return dict(read_param(f, "/".join(sorted(flags))) for f in flags if "=" in f)


def variant_list(text: str) -> list[str]:
    variants = [part.strip() for part in text.split(",") if part.strip()]
    if not variants:
        raise argparse.ArgumentTypeError("at least one variant")
    for variant in variants:
        read_variant(variant)
    return variants


def session_columns(rows: np.ndarray, threads: list) -> np.ndarray:
    """Each SESSION_SIGNALS column less its largest value among the candidate's thread's pool members."""
    values = np.nan_to_num(rows[:, [FEATURES.index(name) for name in SESSION_SIGNALS]])
    best: dict = {}
    for thread, row in zip(threads, values):
        best[thread] = np.maximum(best[thread], row) if thread in best else row
    return values - np.array([best[t] for t in threads]).reshape(values.shape)


def thread_leaders(final: np.ndarray, threads: list) -> np.ndarray:
    """True for each thread's leader: its member with the best weighted score, the first in pool order on a tie."""
    scores = np.asarray(final, dtype=float)
    leader: dict = {}
    for position, thread in enumerate(threads):
        if thread not in leader or scores[position] > scores[leader[thread]]:
            leader[thread] = position
    marked = np.zeros(len(threads), dtype=bool)
    marked[list(leader.values())] = True
    return marked


def below_leader_columns(rows: np.ndarray, final: np.ndarray, threads: list) -> np.ndarray:
    """session_columns with the thread's leader set to a lone member's value (0) in every column."""
    columns = session_columns(rows, threads)
    columns[thread_leaders(final, threads)] = 0.0
    return columns


def widened(pools: list[dict], flags: frozenset[str]) -> list[dict]:
    """The pools with THREAD_COLUMNS (``threads``), the session columns (``insession``) and those below the
    leader (``belowleader``) after each FEATURES row."""
    out = []
    for pool in pools:
        extra = [pool["rows"]]
        if "threads" in flags:
            extra.append(thread_columns(pool["final"], pool["threads"]))
        if "insession" in flags:
            extra.append(session_columns(pool["rows"], pool["threads"]))
        if "belowleader" in flags:
            extra.append(below_leader_columns(pool["rows"], pool["final"], pool["threads"]))
        out.append({**pool, "rows": np.column_stack(extra)})
    return out


def figures(pool: dict, scores: np.ndarray) -> dict[str, float]:
    """rank_recipes' first places and the runner's metrics of one pool's ranking in recall's order."""
    ranked = two_shapes.ranked_keys(pool, scores)
    return {**two_shapes.pool_metrics(pool, ranked), **rank_recipes.first_places(pool, ranked)}


def summary(pools: list[dict], rows: list[dict]) -> list[float]:
    locomo = [r for r, p in zip(rows, pools) if p["shape"] == "locomo"]
    lme = [r for r, p in zip(rows, pools) if p["shape"] == "lme"]
    return two_shapes.means(locomo, LOCOMO_KEYS) + two_shapes.means(lme, LME_KEYS)


class Runs:
    """Trees per (features, training cut, seed group, subset), each trained once in a run."""

    def __init__(self, pools: list[dict], settings: argparse.Namespace) -> None:
        self.plain = pools
        self.wide: dict[frozenset[str], list[dict]] = {}
        self.settings = settings
        self.trained: dict[tuple, Callable] = {}

    def pools(self, flags: frozenset[str]) -> list[dict]:
        columns = flags & COLUMN_FLAGS
        if not columns:
            return self.plain
        if columns not in self.wide:
            self.wide[columns] = widened(self.plain, columns)
        return self.wide[columns]

    def predictor(self, cut: str, flags: frozenset[str], seeds: tuple[int, ...], subset: tuple) -> Callable:
        key = (flags - {"oncut"}, cut if "oncut" in flags else None, seeds, subset)
        if key not in self.trained:
            kind, value = subset
            chosen = [p for p in self.pools(flags) if (p["fold"] != value if kind == "fold" else p["shape"] == value)]
            if "oncut" in flags:
                chosen = [union_cut.subset(p, cut) for p in chosen]
            params = {**(getattr(self.settings, "params", None) or {}), **tree_params(flags)}
            members = [two_shapes.fit(chosen, argparse.Namespace(**{**vars(self.settings), "seed": seed,
                                                                     "params": params or None}))
                       for seed in seeds]
            self.trained[key] = lambda rows: np.mean([member(rows) for member in members], axis=0)
        return self.trained[key]

    def judged(self, variant: str, seeds: tuple[int, ...], weight: float) -> tuple[dict[str, list[dict]], dict]:
        """Every pool's figures held out by fold and across (trees on the other set only), and the
        held-out LongMemEval misses: (pool index, turn) to the turn's held-out place (distinct turns)."""
        cut, flags = read_variant(variant)
        out: dict[str, list[dict]] = {"held out": [], "across": []}
        misses: dict[tuple[int, str], int] = {}
        for index, pool in enumerate(self.pools(flags)):
            held = self.predictor(cut, flags, seeds, ("fold", pool["fold"]))
            other = self.predictor(cut, flags, seeds, ("shape", "lme" if pool["shape"] == "locomo" else "locomo"))
            scores = union_cut.union_scores(held, pool, weight, cut)
            out["held out"].append(figures(pool, scores))
            out["across"].append(figures(pool, union_cut.union_scores(other, pool, weight, cut)))
            if pool["shape"] == "lme":
                ranked = longmemeval.distinct(two_shapes.ranked_keys(pool, scores))
                misses.update({(index, turn): ranked.index(turn) + 1 if turn in ranked else 0
                               for turn in union_cut.missed_turns(pool, scores)})
        return out, misses


def thread_lines(pools: list[dict], misses: dict[tuple[int, str], int]) -> list[str]:
    """Each miss's best part: its place by weighted score, its thread's place, its place inside the
    thread and the thread's pool members, the pool's size and thread count, and the turn's held-out place."""
    lines = ["| question | turn | place by weighted score | thread's place | place in thread | thread's members | "
             "pool | threads | held-out place |", "|---|---|" + "---:|" * 7]
    places = []
    for index, turn in sorted(misses, key=lambda m: (pools[m[0]]["id"], m[1])):
        pool = pools[index]
        parts = [i for i, key in enumerate(pool["keys"]) if key == turn]
        if not parts:
            lines.append(f"| {pool['id']} | {turn} | not in the pool | | | | {len(pool['keys'])} | | |")
            continue
        order = np.argsort(-pool["final"], kind="stable").tolist()
        best = min(parts, key=order.index)
        place, inside, members = union_cut.thread_places(pool["final"], pool["threads"])
        places.append(int(place[best]))
        lines.append(f"| {pool['id']} | {turn} | {order.index(best) + 1} | {place[best]:.0f} | {inside[best]:.0f} | "
                     f"{members[best]:.0f} | {len(pool['keys'])} | {len(set(pool['threads']))} | "
                     f"{misses[(index, turn)]} |")
    lines += ["", "Misses whose thread is among the pool's T best threads: " + ", ".join(
        f"T={t}: {sum(p <= t for p in places)}" for t in (1, 2, 3, 5)) + f" (of {len(places)} in their pools)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    parser.add_argument("--variants", default="30,30+threadtop:1,30+threadtop:2,30/threads", type=variant_list,
                        help="comma-separated CUT[/threads][/insession][/belowleader][/oncut][/ff=X][/leaf=N]; "
                             "the first is the base")
    parser.add_argument("--members", type=whole_number(1), default=1,
                        help="trees averaged per seed group: seed s trains seeds s*K .. s*K+K-1")
    parser.add_argument("--threads", action="store_true",
                        help="where each held-out miss of the base (first seed) sits by thread")
    parser.add_argument("--lme-weight", type=whole_number(1), default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    pools, instances = two_shapes.record_all(args, log)[:2]
    weight = Config().weight_learned
    runs = Runs(pools, args)
    groups = [tuple(range(s * args.members, (s + 1) * args.members)) for s in args.seeds]
    base = args.variants[0]
    held: dict[str, list[tuple]] = {v: [] for v in args.variants}
    across: dict[str, list[list[float]]] = {v: [] for v in args.variants}
    report: list[str] = []
    for seeds in groups:
        first_rows, first_misses = None, set()
        for variant in args.variants:
            rows, places = runs.judged(variant, seeds, weight)
            misses = set(places)
            if variant == base:
                first_rows, first_misses = rows["held out"], misses
                if args.threads and seeds == groups[0]:
                    report = thread_lines(pools, places)
            pairs = [(r["R@10"], f["R@10"]) for r, f, p in zip(rows["held out"], first_rows, pools)
                     if p["shape"] == "locomo"]
            held[variant].append((seeds, summary(pools, rows["held out"]), len(misses), len(first_misses - misses),
                                  len(misses - first_misses), sum(a > b for a, b in pairs),
                                  sum(a < b for a, b in pairs)))
            across[variant].append(summary(pools, rows["across"]))
            log(f"seeds {joined(list(seeds))}: {variant} judged")

    head = ("| variant | seeds | " + " | ".join(f"LoCoMo {k}" for k in LOCOMO_KEYS) + " | "
            + " | ".join(f"LME {k}" for k in LME_KEYS))
    lines = [f"Held out by fold (trees on both sets without the fold); {args.members} member(s) a seed group; "
             "LME R@5 / R@10 in distinct turns, any@5 by session.", "",
             head + f" | LME misses | of {base}'s brought in | of its hits pushed out | LoCoMo R@10 up | down |",
             "|---|---|" + "---:|" * (len(LOCOMO_KEYS) + len(LME_KEYS) + 5)]
    for variant in args.variants:
        for seeds, values, *counts in held[variant]:
            lines.append(f"| {variant} | {'-'.join(map(str, seeds))} | " + " | ".join(f"{v:.4f}" for v in values)
                         + " | " + " | ".join(map(str, counts)) + " |")
        mean = np.mean([row[1] for row in held[variant]], axis=0)
        counts = np.mean([row[2:] for row in held[variant]], axis=0)
        lme_r10 = " / ".join(f"{row[1][len(LOCOMO_KEYS) + 3]:.4f}" for row in held[variant])
        lines.append(f"| **{variant} mean** | {lme_r10} | " + " | ".join(f"{v:.4f}" for v in mean) + " | "
                     + " | ".join(f"{c:.1f}" for c in counts) + " |")
    lines += ["", "Leave one dataset out (LoCoMo's columns: trees trained on LongMemEval only; LongMemEval's: on "
              "LoCoMo only), the seed groups' mean and LME R@10 per group:", "",
              head + " | LME R@10 per group |", "|---|---|" + "---:|" * (len(LOCOMO_KEYS) + len(LME_KEYS)) + "---|"]
    for variant in args.variants:
        mean = np.mean(across[variant], axis=0)
        per = " / ".join(f"{row[len(LOCOMO_KEYS) + 3]:.4f}" for row in across[variant])
        lines.append(f"| {variant} | mean | " + " | ".join(f"{v:.4f}" for v in mean) + f" | {per} |")
    if report:
        lines += ["", f"The held-out misses of {base} (seeds {'-'.join(map(str, groups[0]))}) by thread (places: "
                  "1 = best):", "", *report]
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines += ["", f"{len(pools) - n_lme} LoCoMo questions, {n_lme} LongMemEval questions ({len(instances)} "
              f"instances, abstentions left out); seed groups {', '.join('-'.join(map(str, g)) for g in groups)}; "
              f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
