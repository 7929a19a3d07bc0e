"""Two hand-set levers on the weighted score, measured held out: who said it, and how long it is.

Issue 41 asks whether a question about the person should weigh the person's own turns (and one
addressed to the assistant the assistant's), and whether long assistant turns drown short
statements. The learned ranking reads both as features (recall/speaker_roles.py); this asks
whether a fixed term in the weighted score would do better, on the pools
benchmarks/quality/train_rank_two_shapes.py records (the same options, ``--pools`` included),
without any trees:

- speaker: ``final + b * match``, where ``match`` is 1 for a user turn when the question speaks
  of the person and not to the assistant, and for an assistant turn when it speaks to the
  assistant (the role features' own columns; LoCoMo's turns have no role, so it cannot move);
- length: ``final - a * (log_chars - the pool's median)``.

Each value is reported on LoCoMo and LongMemEval, then held out: for each of the five folds the
value with the best mean R@10 + MRR over the other four folds of both sets scores the fold.

    python benchmarks/quality/role_length_levers.py [--lme-ids A,B] [--pools DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem.recall.learned_rank import FEATURES  # noqa: E402

SPEAKER = (0.0, 0.025, 0.05, 0.1, 0.2, 0.3)
LENGTH = (0.0, 0.01, 0.02, 0.05, 0.1)
KEYS = ("R@5", "R@10", "MRR")


def speaker_match(rows: np.ndarray) -> np.ndarray:
    """1 where the memory's role is the one the question is about (see the module's text)."""
    column = {name: rows[:, FEATURES.index(name)] for name in
              ("role_user", "role_assistant", "query_self", "query_assistant")}
    return (column["role_user"] * column["query_self"] * (1 - column["query_assistant"])
            + column["role_assistant"] * column["query_assistant"])


def speaker_scores(pool: dict, b: float) -> np.ndarray:
    return pool["final"] + b * speaker_match(pool["rows"])


def length_scores(pool: dict, a: float) -> np.ndarray:
    chars = pool["rows"][:, FEATURES.index("log_chars")]
    return pool["final"] - a * (chars - (np.median(chars) if len(chars) else 0.0))


def mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def lever_lines(label: str, pools: list[dict], values: tuple[float, ...],
                scores: Callable[[dict, float], np.ndarray]) -> list[str]:
    """One row per value (LoCoMo, LongMemEval) and the held-out row (value chosen on the other folds)."""
    metrics = {v: [two_shapes.scored(p, scores(p, v)) for p in pools] for v in values}
    lines = []
    for value in values:
        loc = [m for m, p in zip(metrics[value], pools) if p["shape"] == "locomo"]
        lme = [m for m, p in zip(metrics[value], pools) if p["shape"] == "lme"]
        lines.append(f"| {label} = {value:g} | " + " | ".join(f"{mean(loc, k):.3f}" for k in KEYS) + " | "
                     + " | ".join(f"{mean(lme, k):.3f}" for k in KEYS) + " |")
    held: list[tuple[str, dict]] = []
    chosen = []
    for fold in range(two_shapes.FOLDS):
        others = [i for i, p in enumerate(pools) if p["fold"] != fold]
        best = max(values, key=lambda v: np.mean([metrics[v][i]["R@10"] + metrics[v][i]["MRR"] for i in others]))
        chosen.append(best)
        held += [(p["shape"], metrics[best][i]) for i, p in enumerate(pools) if p["fold"] == fold]
    loc = [m for shape, m in held if shape == "locomo"]
    lme = [m for shape, m in held if shape == "lme"]
    lines.append(f"| {label}, chosen on the other folds ({', '.join(f'{v:g}' for v in chosen)}) | "
                 + " | ".join(f"{mean(loc, k):.3f}" for k in KEYS) + " | "
                 + " | ".join(f"{mean(lme, k):.3f}" for k in KEYS) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    pools, instances, _, _ = two_shapes.record_all(args, log)
    lines = ["| weighted score (no trees) | LoCoMo R@5 | LoCoMo R@10 | LoCoMo MRR | LME turn R@5 | "
             "LME turn R@10 | LME MRR |", "|---|" + "---:|" * 6]
    lines += lever_lines("speaker b", pools, SPEAKER, speaker_scores)
    lines += lever_lines("length a", pools, LENGTH, length_scores)
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines += ["", f"{len(pools) - n_lme} LoCoMo questions, {n_lme} LongMemEval questions "
              f"({len(instances)} instances, abstentions left out); {time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
