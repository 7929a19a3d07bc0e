"""Where the prompt hook's related prompts lose their evidence, and what its inject-or-not gate could read (issue 40).

Reads what ``benchmarks/hooks/hook_injection.py --save S.json`` wrote (no store is built; a save from branch gate12 on
also holds each prompt's text and recall's learned, vector and keyword components of its first 20). Printed:

- the related prompts by where their evidence was lost as the hook answered (hook_injection.misses: served, not
  recalled, below recall's third place, in the first three but the gate silent, over the floor but not chosen);
- for the prompts the gate leaves silent though recall's first three hold the evidence ("gate-silent related") and
  for the unrelated prompts it keeps silent (by kind), the store-independent signals of recall's first result:
  each group's quartiles, and how well each signal tells the gate-silent related prompts from the silent unrelated
  ones (AUC, per set and pooled; 0.5: not at all, below 0.5: the other way round). Signals (``SIGNALS``):

  - ``best_relevance``: the prompt's best relevance (what the gate reads today);
  - ``first_learned``: the learned ranking's own score of recall's first (its logistic, the ``learned`` component);
  - ``first_score``: recall's score of its first;
  - ``gap``: 1 − recall's second score / its first's (the first's margin over the rest);
  - ``agree``: 1 when recall's first is also the best of the vector channel and of the keyword channel among the
    first 20 (both channels agree with the ranking), 0.5 when it is the best of one, else 0;
  - ``rare_held``: of the prompt's keywords that at most 1 % of the scope holds (and at least one memory does), the
    share recall's first holds (relevance_model.keyword_coverage's matching; 0 when the prompt has none);
  - ``terms``: the prompt's keywords (recall's extraction); ``words``: its words; ``question``: it ends with "?".

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/gate_losses.py --load S.json
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds  # noqa: E402
from benchmarks.hooks.hook_injection import misses  # noqa: E402
from localmem.recall.relevance_model import keyword_coverage  # noqa: E402

RARE_SHARE = 0.01  # a keyword at most this share of the scope holds is rare
UNDER_FLOOR = "(iii) top three, under the floor"


def first_of(p: dict) -> tuple | None:
    ordered = injection_folds.in_recall_order(p)
    return ordered[0] if ordered else None


def agreement(p: dict) -> float:
    """1: recall's first is the best of both channels among the first 20; 0.5: of one; 0: of neither."""
    components = p.get("components") or {}
    first = first_of(p)
    if first is None or not components:
        return 0.0
    agree = 0.0
    for channel in ("vector", "keyword"):
        values = {m: float(c.get(channel) or 0.0) for m, c in components.items()}
        if values and values.get(first[0], -1.0) >= max(values.values()) and values[first[0]] > 0:
            agree += 0.5
    return agree


def rare_held(p: dict) -> float:
    """The share of the prompt's rare keywords (held by at most RARE_SHARE of the scope, by one at least) that recall's
    first holds."""
    first = first_of(p)
    rows = max(1, int(p.get("rows", 0)))
    rare = [term for term, _lower, hits in p.get("terms", []) if 0 < hits <= max(1, RARE_SHARE * rows)]
    if first is None or not rare:
        return 0.0
    return keyword_coverage(rare, p["memories"][first[0]]["content"])


def signals(p: dict) -> dict[str, float]:
    first = first_of(p)
    scores = p.get("scores", {})
    components = (p.get("components") or {}).get(first[0], {}) if first else {}
    text = str(p.get("prompt", ""))
    return {"best_relevance": max((c[1] for c in p["candidates"]), default=0.0),
            "first_learned": float(components.get("learned") or 0.0),
            "first_score": float(scores.get(first[0], 0.0)) if first else 0.0,
            "gap": 1.0 - injection_folds.second_over_first(p),
            "agree": agreement(p), "rare_held": rare_held(p), "terms": float(len(p.get("terms", []))),
            "words": float(len(re.findall(r"\w+", text))), "question": float(text.rstrip().endswith("?"))}


SIGNALS = ("best_relevance", "first_learned", "first_score", "gap", "agree", "rare_held", "terms", "words",
           "question")


def auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive's value > a negative's), ties counted half."""
    if not positive or not negative:
        return float("nan")
    neg = np.sort(np.array(negative))
    below = np.searchsorted(neg, positive, side="left")
    equal = np.searchsorted(neg, positive, side="right") - below
    return float((below + 0.5 * equal).sum() / (len(positive) * len(negative)))


def quartiles(values: list[float]) -> str:
    if not values:
        return "–"
    q = np.percentile(values, [25, 50, 75])
    return f"{q[1]:.3f} [{q[0]:.3f}, {q[2]:.3f}]"


def groups(prompts: list[dict]) -> dict[str, list[dict]]:
    """Gate-silent related prompts (evidence in recall's first three, the gate silent), served related prompts and
    the silent unrelated prompts by kind, as the hook answered."""
    out: dict[str, list[dict]] = {"gate-silent related": [], "served related": []}
    for p in prompts:
        if p["kind"] == "related":
            where = next(k for k, v in misses([p]).items() if v)
            if where == UNDER_FLOOR:
                out["gate-silent related"].append(p)
            elif where == "served":
                out["served related"].append(p)
        elif not p["shipped_ids"]:
            out.setdefault(f"silent unrelated ({p['source']})", []).append(p)
    return out


def report(sets: dict[str, list[dict]], value: Callable[[dict], dict[str, float]] = signals) -> None:
    both = [p for prompts in sets.values() for p in prompts]
    print("Where related prompts' evidence was lost, as the hook answered (places are recall's):")
    for name, prompts in [*sets.items(), ("both", both)]:
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in misses(prompts).items()))
    for name, prompts in [*sets.items(), ("both", both)]:
        grouped = groups(prompts)
        seen = {g: [value(p) for p in members] for g, members in grouped.items()}
        print(f"\n{name}: recall's first result, median [quartiles]\n| signal | " +
              " | ".join(f"{g} ({len(m)})" for g, m in seen.items()) + " | AUC gate-silent related vs silent "
              "unrelated |\n|---|" + "---|" * (len(seen) + 1))
        silent = [s for g, members in seen.items() if g.startswith("silent unrelated") for s in members]
        for signal in SIGNALS:
            cells = [quartiles([s[signal] for s in members]) for members in seen.values()]
            a = auc([s[signal] for s in seen["gate-silent related"]], [s[signal] for s in silent])
            print(f"| {signal} | " + " | ".join(cells) + f" | {a:.3f} |")
        near = [s for s in silent if s["best_relevance"] >= 0.5]
        print("  AUC against the silent unrelated prompts whose best relevance is at least 0.5 "
              f"({len(near)}): " + ", ".join(
                  f"{signal} {auc([s[signal] for s in seen['gate-silent related']], [s[signal] for s in near]):.3f}"
                  for signal in SIGNALS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    args = parser.parse_args()
    report(injection_folds.load_saved(args.load))


if __name__ == "__main__":
    main()
