"""The prompt hook's inject-or-not gate reading the learned ranking's own score (issue 40, branch gate12).

Reads what ``benchmarks/hooks/hook_injection.py --save S.json`` wrote since branch gate12 (each prompt's recall
``components``: the learned ranking's ``learned`` score of each of its first 20). The three levers pre-registered in
docs/results/history.md ("The prompt hook's inject-or-not gate …", 2026-12-06, branch gate12), each against the
shipped margin rule (``none``: injection_folds.RecallOrderGrid.chosen_margin with the share guarded in each set):

- ``learned``: relevance's logistic also reads each candidate's ``learned`` (its own), fitted per fold;
- ``blend``: a prompt gets notes when ``(1 − w) · best relevance + w · learned of recall's first`` clears the floor;
- ``rescue``: a prompt under the floor still gets notes when its best relevance is at least ``floor − δ`` and recall's
  first's ``learned`` is at least ``τ``.

Per fold (LoCoMo's conversation, LongMemEval's instance index mod 5) the relevance is fitted and the rule with the
lever's parameters chosen on the other four folds of both sets (injection_folds.objective, the share guarded in each
set; of equal rules the first in grid order, the lever's "off" value first), then measured on the fold; and in both
leave-one-dataset-out directions. No seeds: the folds and fits are deterministic. Printed per lever: quiet / related
served / notes per related prompt / share of notes that are evidence / tokens per injection, the related prompts the
gate leaves silent with evidence in recall's first three, and the brief's ship rule against ``none``.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/gate_levers.py --load S.json [--levers learned,blend,rescue]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds as folds  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS, HEADING, measure  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402

BUDGET = 1500
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)  # blend: 0 (off) first
DELTAS = (0.0, 0.05, 0.1, 0.2, 0.3)  # rescue: 0 (off) first
TAUS = (0.85, 0.9, 0.93, 0.95, 0.97)
LEVERS = ("none", "learned", "blend", "rescue")
QUIET, SHARE, NOTES = 0.95, 0.5, 3.0


def attach_learned(sets: dict[str, list[dict]]) -> None:
    """Each candidate's inputs gain ``learned``: the learned ranking's score of it (0 when the save has none)."""
    for prompts in sets.values():
        for p in prompts:
            components = p.get("components") or {}
            for c in p["candidates"]:
                c[2]["learned"] = float((components.get(c[0]) or {}).get("learned") or 0.0)


class GateGrid(folds.RecallOrderGrid):
    """RecallOrderGrid with recall's first's ``learned`` score, and the shipped margin rule with a gate lever."""

    def __init__(self, prompts: list[dict], relevance: Callable[[dict], float]):
        super().__init__(prompts, relevance)
        self.first_learned = np.array([float(ordered[0][2].get("learned", 0.0)) if ordered else 0.0
                                       for ordered in map(folds.in_recall_order, prompts)])

    def passes(self, floor: float, lever: str, a: float, b: float) -> np.ndarray:
        """Which prompts the gate lets through: ``blend`` (w = a), ``rescue`` (δ = a, τ = b), else the best
        relevance against the floor."""
        if lever == "blend":
            return (1.0 - a) * self.best + a * self.first_learned >= floor
        if lever == "rescue":
            return (self.best >= floor) | ((a > 0) & (self.best >= floor - a) & (self.first_learned >= b))
        return self.best >= floor

    def notes(self, note_floor: float, cap: int, margin: float) -> np.ndarray:
        """The notes each prompt gets once the gate lets it through (the shipped rule past its floor)."""
        return self.chosen_margin(-1.0, note_floor, cap, margin)

    def chosen_gate(self, rule: Sequence) -> np.ndarray:
        floor, note_floor, cap, margin, lever, a, b = rule
        return self.notes(note_floor, cap, margin) & self.passes(floor, lever, a, b)[:, None]

    def figures(self, kept: np.ndarray, found: np.ndarray) -> dict[str, float]:
        """folds.scored with the share guarded: the lowest share of any set given notes."""
        figures = folds.scored(kept, found, self.related)
        shares = [folds.scored(kept[m], found[m], self.related[m])["precision"]
                  for m in (self.sets == name for name in np.unique(self.sets)) if kept[m & self.related].any()]
        figures["precision"] = min(shares or [figures["precision"]])
        return figures

    def choose(self, lever: str = "none") -> tuple:  # type: ignore[override]
        """(floor, note floor, cap, margin, lever, a, b) best on ``objective`` (the first of equals)."""
        pairs = {"blend": [(w, 0.0) for w in WEIGHTS],
                 "rescue": [(0.0, 0.0)] + [(d, t) for d in DELTAS[1:] for t in TAUS]}.get(lever, [(0.0, 0.0)])
        best, best_key = None, None
        for (i, note_floor), (j, cap), (k, margin) in itertools.product(
                enumerate(folds.NOTE_FLOORS), enumerate((2, 3)), enumerate(folds.MARGINS)):
            chosen = self.notes(note_floor, cap, margin)
            kept_all, found_all = chosen.sum(axis=1), (chosen & self.evidence).sum(axis=1)
            for (h, floor), (g, (a, b)) in itertools.product(enumerate(folds.FLOORS), enumerate(pairs)):
                if note_floor > floor:
                    continue
                passes = self.passes(floor, lever, a, b)
                key = folds.objective(self.figures(kept_all * passes, found_all * passes))
                order = (-h, -i, -j, -k, -g)  # the first of equals in (floor, note floor, cap, margin, lever) order
                if best_key is None or (key, order) > best_key:
                    best, best_key = (floor, note_floor, cap, margin, lever, a, b), (key, order)
        return best


def blocks(prompts: list[dict], relevance, rule: tuple) -> tuple[dict[int, list[str]], dict[int, int], int]:
    """Each prompt's notes through the hook's block and its tokens; and the related prompts the gate left silent
    with evidence in recall's first three."""
    grid = GateGrid(prompts, relevance)
    chosen = grid.chosen_gate(rule)
    ids, tokens, silent = {}, {}, 0
    passes = grid.passes(rule[0], *rule[4:])
    for i, p in enumerate(prompts):
        ordered = folds.in_recall_order(p)
        picked = [c[0] for j, c in enumerate(ordered) if chosen[i, j]]
        block, ids[id(p)] = build_block([p["memories"][m] for m in picked], HEADING, BUDGET, rule[2])
        tokens[id(p)] = estimate_tokens(block) if block else 0
        silent += p["kind"] == "related" and not passes[i] and any(c[0] in p["evidence"] for c in ordered[:3])
    return ids, tokens, silent


def lever_rows(sets: dict[str, list[dict]], lever: str) -> dict:
    features = (*FITTED, "learned") if lever == "learned" else FITTED
    both = [p for prompts in sets.values() for p in prompts]
    ids, tokens, rules, silent = {}, {}, [], {}
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = folds.fit_relevance(train, features)
        rules.append(GateGrid(train, relevance).choose(lever))
        part = [p for p in both if p["fold"] == fold]
        got = blocks(part, relevance, rules[-1])
        ids.update(got[0])
        tokens.update(got[1])
        for name in sets:
            silent[(name, fold)] = blocks([p for p in part if p["set"] == name], relevance, rules[-1])[2]
    print(f"\nLever {lever!r}, held out together (relevance {', '.join(features)}; the share guarded in each set):")
    print("| | quiet (n) | related served (n) | notes per related prompt | share of notes evidence | tokens | "
          "gate silent, evidence in recall's first three |\n|---|---|---|---|---|---|---|")
    out = {}
    for name, prompts in [*sets.items(), ("both", both)]:
        out[name] = measure(prompts, ids, tokens)
        count = sum(silent[(n, f)] for n in (sets if name == "both" else [name]) for f in range(FOLDS))
        print(row(name, out[name]) + f" {count} |")
    print("per fold (floor, note floor, cap, margin, lever, a, b): " + "; ".join(map(str, rules)))
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance = folds.fit_relevance(sets[source], features)
            rule = GateGrid(sets[source], relevance).choose(lever)
            got = blocks(sets[target], relevance, rule)
            out[f"{source}→{target}"] = measure(sets[target], got[0], got[1])
            print(row(f"fit on {source} {rule} → {target}", out[f"{source}→{target}"]) + f" {got[2]} |")
    return out


def row(name: str, m: dict[str, float]) -> str:
    return (f"| {name} | {m['quiet']:.3f} ({m['unrelated']}) | {m['hit']:.3f} ({m['related']}) | {m['notes']:.2f} | "
            f"{m['precision']:.3f} | {m['tokens']:.0f} |")


def ship_rule(base: dict, lever: dict, names: list[str]) -> list[str]:
    """The brief's ship rule against the shipped rule: what the lever fails (empty: met)."""
    failed = [] if lever["both"]["hit"] > base["both"]["hit"] else [
        f"both served {lever['both']['hit']:.3f} not above {base['both']['hit']:.3f}"]
    failed += [f"{n} served {lever[n]['hit']:.3f} below {base[n]['hit']:.3f}" for n in names
               if lever[n]["hit"] < base[n]["hit"]]
    failed += [f"{n} quiet {lever[n]['quiet']:.3f}" for n in names if lever[n]["quiet"] < QUIET]
    failed += [f"{n} share {lever[n]['precision']:.3f}" for n in names if lever[n]["precision"] < SHARE]
    failed += [f"{n} notes {lever[n]['notes']:.2f}" for n in names if lever[n]["notes"] > NOTES]
    failed += [f"{d} quiet {lever[d]['quiet']:.3f} below {base[d]['quiet']:.3f}" for d in lever
               if "→" in d and lever[d]["quiet"] < base[d]["quiet"]]
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    parser.add_argument("--levers", default=",".join(LEVERS[1:]),
                        help=f"which levers (comma-separated, of {', '.join(LEVERS[1:])}); none is always measured")
    args = parser.parse_args()
    levers = [name for name in args.levers.split(",") if name]
    if not levers or not set(levers) <= set(LEVERS):
        parser.error(f"--levers takes some of {', '.join(LEVERS[1:])}, got {args.levers!r}")
    started = time.perf_counter()
    sets = folds.load_saved(args.load)
    if not all("components" in p for prompts in sets.values() for p in prompts):
        parser.error("the save holds no recall components: save it with hook_injection.py from branch gate12 on")
    attach_learned(sets)
    results = {lever: lever_rows(sets, lever) for lever in dict.fromkeys(["none", *levers])}
    for lever, figures in results.items():
        if lever != "none":
            failed = ship_rule(results["none"], figures, list(sets))
            print(f"\nship rule, {lever!r}: " + ("met" if not failed else "missed: " + "; ".join(failed)))
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
