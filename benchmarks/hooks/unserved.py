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

Printed per set and both: the counts, and for each cause the places and the rule's fold.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/unserved.py --load S.json
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds as folds  # noqa: E402
from benchmarks.hooks import gate_levers  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402

CAUSES = ("not recalled", "below the third", "gate silent", "2nd, the margin", "3rd, the cap", "other")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
