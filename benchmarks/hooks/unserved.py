"""The related prompts the prompt hook leaves unserved held out, by cause (issue 40, branch gate13).

Reads what ``benchmarks/hooks/hook_injection.py --save S.json`` wrote (since branch gate12: recall's components). Per
fold (LoCoMo's conversation, LongMemEval's instance index mod 5) the relevance is fitted and the shipped rule with its
blend chosen on the other four folds of both sets (gate_levers.GateGrid, lever ``blend``: gate_levers.py's headline
row), then every related prompt of the fold that gets no evidence note is put under one cause, by the best place of
its evidence in recall's answer:

- ``not recalled``: no evidence turn among recall's first 20;
- ``below the third``: the best-placed evidence turn is 4th to 20th;
- ``gate silent``: evidence in the first three, the inject-or-not decision silent;
- ``2nd, the margin``: evidence at 2nd (not 1st), the gate open, the second note held back because recall's second
  scores under the margin × its first;
- ``3rd, the cap``: evidence at 3rd (not 1st or 2nd), the gate open, past the cap of two notes;
- ``other``: anything else (a note floor over 0).

Printed per set and both: the counts.

``--levers`` also measures the two levers pre-registered on the largest cause (docs/results/history.md, branch
gate13), each chosen per fold jointly with the shipped rule and its blend (the share guarded in each set; the lever's
"off" value first, so of equal rules the one without it wins), held out together and across sets, with the ship rule
against the shipped rule (``none``):

- ``second_by_relevance``: the notes after the first are the most relevant of recall's places 2 to K (over the note
  floor) instead of recall's next ones; K in SECOND_K;
- ``third_by_relevance``: a prompt given two notes also gets a third, the most relevant of recall's places 3 to K not
  already chosen, when its relevance is at least t; (K, t) in THIRD.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/unserved.py --load S.json [--levers second_by_relevance,...]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds as folds  # noqa: E402
from benchmarks.hooks import gate_levers  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS, HEADING, measure  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402

CAUSES = ("not recalled", "below the third", "gate silent", "2nd, the margin", "3rd, the cap", "other")
SECOND_K = (None, 3, 5, 10, 20)  # None: off
THIRD = (None, *((k, t) for k in (5, 10, 20) for t in (0.9, 0.95, 0.98)))
LEVERS = {"none": (None,), "second_by_relevance": SECOND_K, "third_by_relevance": THIRD}


def cause_of(grid: gate_levers.GateGrid, i: int, rule: tuple, passes: np.ndarray) -> str:
    """Why related prompt ``i`` of ``grid`` got no evidence note under ``rule`` (module docstring)."""
    places = np.flatnonzero(grid.evidence[i])
    if not len(places):
        return "not recalled"
    if places[0] >= 3:
        return "below the third"
    if not passes[i]:
        return "gate silent"
    if places[0] == 1 and grid.second[i] < rule[3]:
        return "2nd, the margin"
    if places[0] == 2 and rule[2] < 3:
        return "3rd, the cap"
    return "other"


def unserved(sets: dict[str, list[dict]], rules: dict[int, tuple] | None = None) -> list[tuple[dict, str]]:
    """Every held-out related prompt that gets no evidence note, with its cause."""
    both = [p for prompts in sets.values() for p in prompts]
    out = []
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = folds.fit_relevance(train, FITTED)
        rule = rules[fold] if rules else gate_levers.GateGrid(train, relevance).choose("blend")
        part = [p for p in both if p["fold"] == fold]
        grid = gate_levers.GateGrid(part, relevance)
        chosen, passes = grid.chosen_gate(rule), grid.passes(rule[0], *rule[4:])
        for i, p in enumerate(part):
            if p["kind"] == "related" and not (chosen[i] & grid.evidence[i]).any():
                out.append((p, cause_of(grid, i, rule, passes)))
    return out


class NoteGrid(gate_levers.GateGrid):
    """GateGrid whose notes past the first may be picked by relevance (the two levers); the gate is the blend's."""

    def lever_notes(self, note_floor: float, cap: int, margin: float, lever: str, value) -> np.ndarray:
        base = self.notes(note_floor, cap, margin)
        if value is None:
            return base
        counts = base.sum(axis=1)
        places = np.arange(self.relevance.shape[1])[None, :]
        first = np.where(counts > 0, base.argmax(axis=1), -1)[:, None]
        over = self.relevance >= note_floor
        if lever == "second_by_relevance":
            pool = np.where((places >= 1) & (places < value) & over & (places != first), self.relevance, -np.inf)
            rank = np.argsort(np.argsort(-pool, axis=1, kind="stable"), axis=1, kind="stable")
            picked = (rank < (counts - 1)[:, None]) & np.isfinite(pool) & (counts >= 2)[:, None]
            return picked | (places == first)
        k, floor = value
        eligible = (places >= 2) & (places < k) & over & ~base & (self.relevance >= floor)
        pool = np.where(eligible, self.relevance, -np.inf)
        best = pool.argmax(axis=1)
        third = (places == best[:, None]) & np.isfinite(pool.max(axis=1))[:, None] & (counts == 2)[:, None]
        return base | third

    def chosen_lever(self, rule: tuple) -> np.ndarray:
        floor, note_floor, cap, margin, weight, lever, value = rule
        notes = self.lever_notes(note_floor, cap, margin, lever, value)
        return notes & self.passes(floor, "blend", weight, 0.0)[:, None]

    def choose_lever(self, lever: str) -> tuple:
        """(floor, note floor, cap, margin, blend weight, lever, value) best on ``objective`` (the first of equals)."""
        passes = {(h, g): self.passes(floor, "blend", w, 0.0)
                  for (h, floor), (g, w) in itertools.product(enumerate(folds.FLOORS), enumerate(gate_levers.WEIGHTS))}
        best, best_key = None, None
        for (i, note_floor), (j, cap), (k, margin), (v, value) in itertools.product(
                enumerate(folds.NOTE_FLOORS), enumerate((2, 3)), enumerate(folds.MARGINS), enumerate(LEVERS[lever])):
            chosen = self.lever_notes(note_floor, cap, margin, lever, value)
            kept_all, found_all = chosen.sum(axis=1), (chosen & self.evidence).sum(axis=1)
            for (h, floor), (g, w) in itertools.product(enumerate(folds.FLOORS), enumerate(gate_levers.WEIGHTS)):
                if note_floor > floor:
                    continue
                gate = passes[(h, g)]
                key = folds.objective(self.figures(kept_all * gate, found_all * gate))
                order = (-h, -i, -j, -k, -g, -v)
                if best_key is None or (key, order) > best_key:
                    best, best_key = (floor, note_floor, cap, margin, w, lever, value), (key, order)
        return best


def lever_blocks(prompts: list[dict], relevance, rule: tuple) -> tuple[dict[int, list[str]], dict[int, int]]:
    chosen = NoteGrid(prompts, relevance).chosen_lever(rule)
    ids, tokens = {}, {}
    for i, p in enumerate(prompts):
        picked = [c[0] for j, c in enumerate(folds.in_recall_order(p)) if chosen[i, j]]
        block, ids[id(p)] = build_block([p["memories"][m] for m in picked], HEADING, gate_levers.BUDGET, 3)
        tokens[id(p)] = estimate_tokens(block) if block else 0
    return ids, tokens


def lever_rows(sets: dict[str, list[dict]], lever: str) -> dict:
    both = [p for prompts in sets.values() for p in prompts]
    ids, tokens, rules = {}, {}, []
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = folds.fit_relevance(train, FITTED)
        rules.append(NoteGrid(train, relevance).choose_lever(lever))
        got = lever_blocks([p for p in both if p["fold"] == fold], relevance, rules[-1])
        ids.update(got[0])
        tokens.update(got[1])
    print(f"\nLever {lever!r}, held out together (the blend's gate; the share guarded in each set):\n"
          "| | quiet (n) | related served (n) | notes per related prompt | share of notes evidence | tokens |\n"
          "|---|---|---|---|---|---|")
    out = {}
    for name, prompts in [*sets.items(), ("both", both)]:
        out[name] = measure(prompts, ids, tokens)
        print(gate_levers.row(name, out[name]))
    print("per fold (floor, note floor, cap, margin, blend, lever, value): " + "; ".join(map(str, rules)))
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance = folds.fit_relevance(sets[source], FITTED)
            rule = NoteGrid(sets[source], relevance).choose_lever(lever)
            out[f"{source}→{target}"] = measure(sets[target], *lever_blocks(sets[target], relevance, rule))
            print(gate_levers.row(f"fit on {source} {rule} → {target}", out[f"{source}→{target}"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    parser.add_argument("--levers", default="", help=f"also these levers (comma-separated, of "
                                                     f"{', '.join(list(LEVERS)[1:])}), against the shipped rule")
    args = parser.parse_args()
    levers = [name for name in args.levers.split(",") if name]
    if not set(levers) <= set(LEVERS) - {"none"}:
        parser.error(f"--levers takes some of {', '.join(list(LEVERS)[1:])}, got {args.levers!r}")
    started = time.perf_counter()
    sets = folds.load_saved(args.load)
    gate_levers.attach_learned(sets)
    lost = unserved(sets)
    related = {name: sum(p["kind"] == "related" for p in prompts) for name, prompts in sets.items()}
    print("| related prompts, held out | unserved | " + " | ".join(CAUSES) + " |\n|---|" + "---:|" * (len(CAUSES) + 1))
    for name in [*sets, "both"]:
        mine = [c for p, c in lost if name == "both" or p["set"] == name]
        counts = Counter(mine)
        total = sum(related.values()) if name == "both" else related[name]
        print(f"| {name} ({total}) | {len(mine)} | " + " | ".join(str(counts[c]) for c in CAUSES) + " |")
    if levers:
        results = {lever: lever_rows(sets, lever) for lever in ["none", *levers]}
        for lever in levers:
            failed = gate_levers.ship_rule(results["none"], results[lever], list(sets))
            print(f"\nship rule, {lever!r}: " + ("met" if not failed else "missed: " + "; ".join(failed)))
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
