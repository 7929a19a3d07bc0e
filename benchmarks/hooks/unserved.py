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

and the two pre-registered on the gate's and the cap's causes (docs/results/history.md, branch third15):

- ``third_by_margin``: a prompt whose second note passed the margin gets a third (recall's next over the note floor)
  when recall's score of its third candidate is at least m3 × its first's; m3 in THIRD_MARGINS;
- ``prompt_gate``: the inject-or-not decision made by a logistic over six prompt-level signals (``prompt_signals``),
  fitted per fold on the training prompts (``fit_prompt_gate``), at a threshold t in GATE_THRESHOLDS in place of the
  floor and blend.

and the one pre-registered on the gate's cause relative to the store (docs/results/history.md, branch lmefull16):

- ``scope_floor``: a prompt passes the gate when its blend value clears the floor and also the median blend value of
  its scope's off-topic probes (itself left out; benchmarks/common/scope_probes.py) plus d; d in SCOPE_LEADS. Its
  ship rule also guards the quiet of the unrelated prompts that are not off-topic ones (``not_offtopic_guard``).

and the one pre-registered on the gate's cause from the store's breadth of answer (docs/results/history.md, branch
gate17):

- ``support_gate``: a prompt passes the gate only when its support, the number of recall's first 20 candidates whose
  relevance is at least SUPPORT_RELEVANCE, is at least s, the floor chosen jointly (so a fold may lower its floor
  while thin support keeps the unrelated prompts shut); s in SUPPORT_COUNTS.

``--forced`` also prints each lever forced on (its grid without the "off" value), the rest chosen per fold as before.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/unserved.py --load S.json [--levers second_by_relevance,...]
        [--forced]
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
from benchmarks.common.scope_probes import PROBE, attach_scopes, scope_references  # noqa: E402
from benchmarks.hooks import gate_levers  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS, HEADING, measure  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED, fit_logistic  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402

CAUSES = ("not recalled", "below the third", "gate silent", "2nd, the margin", "3rd, the cap", "other")
SECOND_K = (None, 3, 5, 10, 20)  # None: off
THIRD = (None, *((k, t) for k in (5, 10, 20) for t in (0.9, 0.95, 0.98)))
THIRD_MARGINS = (None, 0.95, 0.9, 0.85, 0.8, 0.7)  # None: off
GATE_THRESHOLDS = (None, *(round(0.30 + 0.02 * i, 2) for i in range(35)))  # None: off (the blend); 0.30 … 0.98
SCOPE_LEADS = (None, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)  # None: off (the blend against the floor alone)
SUPPORT_COUNTS = (None, 1, 2, 3, 4, 5, 6, 8)  # None: off
SUPPORT_RELEVANCE = 0.5  # a candidate counts towards support when its relevance says more likely related than not
LEVERS = {"none": (None,), "second_by_relevance": SECOND_K, "third_by_relevance": THIRD,
          "third_by_margin": THIRD_MARGINS, "prompt_gate": GATE_THRESHOLDS, "scope_floor": SCOPE_LEADS,
          "support_gate": SUPPORT_COUNTS}
# levers that change whether a prompt gets notes, never which; of them, those that add a condition to the blend's floor
GATE_ONLY = ("prompt_gate", "scope_floor", "support_gate")
BLEND_CONDITIONS = ("scope_floor", "support_gate")
GATE_SIGNALS = ("best relevance", "learned of recall's first", "recall's second over first",
                "first's cosine_over_kth", "first's unseen_terms", "best less the rest's median")


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
    """GateGrid whose notes past the first may be picked by relevance or recall's third score (the levers), and whose
    gate is the blend's or, with ``use_gate``, a fitted prompt gate's."""

    def __init__(self, prompts: list[dict], relevance):
        super().__init__(prompts, relevance)
        self.third = np.array([folds.score_over_first(p, 3, unknown=0.0) for p in prompts])
        self.signals = prompt_signals(self, prompts)
        self.gate_probability = np.zeros(len(prompts))
        self.scopes = [p.get("scope") for p in prompts]
        self.probes = np.array([p.get("source") == PROBE for p in prompts], dtype=bool)
        self.references: dict[float, np.ndarray] = {}  # by blend weight: the scope's probes' median blend value
        # absent places hold relevance -1, so they never count
        self.support = (self.relevance >= SUPPORT_RELEVANCE).sum(axis=1)

    def over_reference(self, weight: float, lead: float | None) -> np.ndarray:
        """Which prompts' blend value is at least their scope's reference plus ``lead`` (every prompt: lead None)."""
        if lead is None:
            return np.ones(len(self.best), dtype=bool)
        value = (1.0 - weight) * self.best + weight * self.first_learned
        if weight not in self.references:
            self.references[weight] = scope_references(value, self.scopes, self.probes)
        return value >= self.references[weight] + lead

    def gate_condition(self, weight: float, lever: str, value) -> np.ndarray:
        """What ``lever`` at ``value`` asks of a prompt besides the blend's floor (every prompt passes: off)."""
        if lever == "scope_floor":
            return self.over_reference(weight, value)
        if lever == "support_gate" and value is not None:
            return self.support >= value
        # off, or a lever that adds nothing to the floor
        return np.ones(len(self.best), dtype=bool)

    def use_gate(self, beta: np.ndarray) -> None:
        """The prompt gate's probability of each prompt (``fit_prompt_gate``'s coefficients)."""
        z = beta[0] + self.signals @ beta[1:]
        self.gate_probability = 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))

    def lever_notes(self, note_floor: float, cap: int, margin: float, lever: str, value) -> np.ndarray:
        base = self.notes(note_floor, cap, margin)
        if value is None or lever in GATE_ONLY:
            return base
        if lever == "third_by_margin":
            third = (self.second >= margin) & (self.third >= value)
            return np.where(third[:, None], self.notes(note_floor, max(cap, 3), margin), base)
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

    def lever_passes(self, floor: float | None, weight: float | None, lever: str, value) -> np.ndarray:
        """Which prompts the gate lets through: the prompt gate's probability against ``value`` (lever
        ``prompt_gate`` on), else the blend's (with ``scope_floor`` or ``support_gate`` on, and their condition:
        ``gate_condition``)."""
        if lever == "prompt_gate" and value is not None:
            return self.gate_probability >= value
        return self.passes(floor, "blend", weight, 0.0) & self.gate_condition(weight, lever, value)

    def chosen_lever(self, rule: tuple) -> np.ndarray:
        floor, note_floor, cap, margin, weight, lever, value = rule
        notes = self.lever_notes(note_floor, cap, margin, lever, value)
        return notes & self.lever_passes(floor, weight, lever, value)[:, None]

    def objective_keys(self, kept_all: np.ndarray, found_all: np.ndarray, gates: np.ndarray) -> list[tuple]:
        """``folds.objective(self.figures(kept_all * gate, found_all * gate))`` for every row ``gate`` of ``gates``
        (gates × prompts) at once: the same sums of whole numbers, so the same floats."""
        kept, found = gates * kept_all, gates * found_all
        related, unrelated = self.related, ~self.related
        quiet = (kept[:, unrelated] == 0).mean(axis=1) if unrelated.any() else np.ones(len(gates))
        hit = (found[:, related] > 0).mean(axis=1) if related.any() else np.zeros(len(gates))
        notes, evidence = kept[:, related].sum(axis=1), found[:, related].sum(axis=1)
        share = np.where(notes > 0, evidence / np.maximum(notes, 1), 0.0)
        lowest = np.full(len(gates), np.inf)  # the lowest share of any set given notes (GateGrid.figures)
        for name in np.unique(self.sets):
            mask = (self.sets == name) & related
            n, f = kept[:, mask].sum(axis=1), found[:, mask].sum(axis=1)
            lowest = np.minimum(lowest, np.where(n > 0, f / np.maximum(n, 1), np.inf))
        share = np.where(np.isfinite(lowest), lowest, share)
        first = np.where(quiet >= folds.TARGET_QUIET, 1.0, quiet - 1.0)
        second = np.where(share >= folds.TARGET_PRECISION, 1.0, share - 1.0)
        return list(zip(first.tolist(), second.tolist(), hit.tolist(), share.tolist()))

    def choose_lever(self, lever: str, values: tuple | None = None) -> tuple:
        """(floor, note floor, cap, margin, blend weight, lever, value) best on ``objective`` (the first of equals),
        the value among ``values`` (default: the lever's grid). With the prompt gate on, floor and weight are None
        and the rule orders after every floor (of equal rules, one with the blend's gate wins). Each note choice's
        gates are scored together (``objective_keys``)."""
        values = LEVERS[lever] if values is None else values
        pairs = list(itertools.product(range(len(folds.FLOORS)), range(len(gate_levers.WEIGHTS))))
        blend = np.array([self.passes(folds.FLOORS[h], "blend", gate_levers.WEIGHTS[g], 0.0) for h, g in pairs])
        relative = {v: np.array([self.gate_condition(gate_levers.WEIGHTS[g], lever, value) for _, g in pairs])
                    for v, value in enumerate(values) if lever in BLEND_CONDITIONS and value is not None}
        best, best_key = None, None
        for (i, note_floor), (j, cap), (k, margin) in itertools.product(
                enumerate(folds.NOTE_FLOORS), enumerate((2, 3)), enumerate(folds.MARGINS)):
            rows = [r for r, (h, _) in enumerate(pairs) if note_floor <= folds.FLOORS[h]]
            for v, value in enumerate(values):
                chosen = self.lever_notes(note_floor, cap, margin, lever, value)
                kept_all, found_all = chosen.sum(axis=1), (chosen & self.evidence).sum(axis=1)
                if lever == "prompt_gate" and value is not None:
                    gates, named = (self.gate_probability >= value)[None, :], [(len(folds.FLOORS), None, 0, None)]
                else:
                    gates = blend[rows] & relative[v][rows] if v in relative else blend[rows]
                    named = [(pairs[r][0], folds.FLOORS[pairs[r][0]], pairs[r][1], gate_levers.WEIGHTS[pairs[r][1]])
                             for r in rows]
                for (h, floor, g, w), key in zip(named, self.objective_keys(kept_all, found_all, gates)):
                    order = (-h, -i, -j, -k, -g, -v)
                    if best_key is None or (key, order) > best_key:
                        best, best_key = (floor, note_floor, cap, margin, w, lever, value), (key, order)
        return best


def prompt_signals(grid: gate_levers.GateGrid, prompts: list[dict]) -> np.ndarray:
    """Each prompt's GATE_SIGNALS: what the hook has of it before deciding (no dataset's formatting)."""
    rows = []
    for i, p in enumerate(prompts):
        ordered = folds.in_recall_order(p)
        first = ordered[0][2] if ordered else {}
        values = sorted(grid.relevance[i, :len(ordered)], reverse=True)
        rest = float(np.median(values[1:])) if len(values) > 1 else 0.0
        best = float(values[0]) if values else 0.0
        rows.append([best, grid.first_learned[i], grid.second[i], float(first.get("cosine_over_kth", 0.0)),
                     float(first.get("unseen_terms", 0.0)), best - rest])
    return np.array(rows, dtype=float).reshape(len(prompts), len(GATE_SIGNALS))


def fit_prompt_gate(grid: NoteGrid, prompts: list[dict]) -> np.ndarray:
    """The prompt gate's logistic ([intercept, one per GATE_SIGNALS]) on ``grid``'s prompts: a related prompt with
    evidence in recall's first three 1, an unrelated one 0; other related prompts and the hand-written off-topic ones
    left out; each (set, label) cell weighed equally."""
    rows = []
    for i, p in enumerate(prompts):
        if p.get("source") == "offtopic" or (p["kind"] == "related" and not grid.evidence[i, :3].any()):
            continue
        rows.append((list(grid.signals[i]), float(p["kind"] == "related"), p["set"]))
    return fit_logistic(*folds.balanced(rows))


def fitted(train: list[dict], lever: str, values: tuple | None = None) -> tuple:
    """(relevance, prompt gate coefficients or None, rule) fitted and chosen on ``train``."""
    relevance = folds.fit_relevance(train, FITTED)
    grid = NoteGrid(train, relevance)
    beta = fit_prompt_gate(grid, train) if lever == "prompt_gate" else None
    if beta is not None:
        grid.use_gate(beta)
    return relevance, beta, grid.choose_lever(lever, values)


def lever_blocks(prompts: list[dict], relevance, rule: tuple, beta: np.ndarray | None = None
                 ) -> tuple[dict[int, list[str]], dict[int, int]]:
    grid = NoteGrid(prompts, relevance)
    if beta is not None:
        grid.use_gate(beta)
    chosen = grid.chosen_lever(rule)
    ids, tokens = {}, {}
    for i, p in enumerate(prompts):
        picked = [c[0] for j, c in enumerate(folds.in_recall_order(p)) if chosen[i, j]]
        block, ids[id(p)] = build_block([p["memories"][m] for m in picked], HEADING, gate_levers.BUDGET, 3)
        tokens[id(p)] = estimate_tokens(block) if block else 0
    return ids, tokens


def lever_rows(sets: dict[str, list[dict]], lever: str, values: tuple | None = None,
               title: str = "") -> tuple[dict, dict[int, list[str]]]:
    """The lever held out together and across sets (its figures by row name) and each prompt's notes held out."""
    both = [p for prompts in sets.values() for p in prompts]
    ids, tokens, rules, gates = {}, {}, [], []
    for fold in range(FOLDS):
        relevance, beta, rule = fitted([p for p in both if p["fold"] != fold], lever, values)
        rules.append(rule)
        if beta is not None:
            gates.append(beta)
        got = lever_blocks([p for p in both if p["fold"] == fold], relevance, rule, beta)
        ids.update(got[0])
        tokens.update(got[1])
    print(f"\nLever {lever!r}{title}, held out together (the share guarded in each set):\n"
          "| | quiet (n) | related served (n) | notes per related prompt | share of notes evidence | tokens |\n"
          "|---|---|---|---|---|---|")
    out = {}
    for name, prompts in [*sets.items(), ("both", both)]:
        out[name] = measure(prompts, ids, tokens)
        others = measure([p for p in prompts if p.get("source") != PROBE], ids, tokens)
        out[name]["quiet_not_offtopic"], out[name]["not_offtopic"] = others["quiet"], others["unrelated"]
        print(gate_levers.row(name, out[name]))
    print("quiet on the unrelated prompts that are not off-topic ones: " + ", ".join(
        f"{name} {out[name]['quiet_not_offtopic']:.3f} ({out[name]['not_offtopic']})" for name in [*sets, "both"]))
    print("per fold (floor, note floor, cap, margin, blend, lever, value): " + "; ".join(map(str, rules)))
    for beta in gates:
        print("  prompt gate: intercept {:.2f}; ".format(beta[0]) + ", ".join(
            f"{name} {weight:.2f}" for name, weight in zip(GATE_SIGNALS, beta[1:])))
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance, beta, rule = fitted(sets[source], lever, values)
            out[f"{source}→{target}"] = measure(sets[target], *lever_blocks(sets[target], relevance, rule, beta))
            print(gate_levers.row(f"fit on {source} {rule} → {target}", out[f"{source}→{target}"]))
    return out, ids


def not_offtopic_guard(base: dict, lever: dict, names: list[str]) -> list[str]:
    """``scope_floor``'s guard more (its probes are the kind of prompt the off-topic ones are): quiet on the other
    unrelated prompts no lower than ``base``'s in each set (empty: met)."""
    return [f"{n} quiet on the prompts not off-topic {lever[n]['quiet_not_offtopic']:.3f} below "
            f"{base[n]['quiet_not_offtopic']:.3f}" for n in names
            if lever[n]["quiet_not_offtopic"] < base[n]["quiet_not_offtopic"]]


def changed(sets: dict[str, list[dict]], base: dict[int, list[str]], lever: dict[int, list[str]]) -> str:
    """Per set, related prompts the lever serves that ``base`` does not / the reverse, and unrelated prompts it gives
    notes that ``base`` keeps quiet / the reverse."""
    def served(p: dict, ids: dict) -> bool:
        return bool(set(ids[id(p)]) & p["evidence"]) if p["kind"] == "related" else bool(ids[id(p)])
    parts = []
    for name, prompts in sets.items():
        counts = [sum(p["kind"] == kind and served(p, a) and not served(p, b) for p in prompts)
                  for kind in ("related", "unrelated") for a, b in ((lever, base), (base, lever))]
        parts.append(f"{name} related +{counts[0]} / -{counts[1]}, unrelated given notes +{counts[2]} / -{counts[3]}")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    parser.add_argument("--levers", default="", help=f"also these levers (comma-separated, of "
                                                     f"{', '.join(list(LEVERS)[1:])}), against the shipped rule")
    parser.add_argument("--forced", action="store_true", help="with --levers: also each lever forced on (its grid "
                                                                    "without the off value)")
    args = parser.parse_args()
    levers = [name for name in args.levers.split(",") if name]
    if not set(levers) <= set(LEVERS) - {"none"}:
        parser.error(f"--levers takes some of {', '.join(list(LEVERS)[1:])}, got {args.levers!r}")
    started = time.perf_counter()
    sets = folds.load_saved(args.load)
    gate_levers.attach_learned(sets)
    attach_scopes(sets)
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
            failed = gate_levers.ship_rule(results["none"][0], results[lever][0], list(sets))
            if lever == "scope_floor":
                failed += not_offtopic_guard(results["none"][0], results[lever][0], list(sets))
            print(f"\nship rule, {lever!r}: " + ("met" if not failed else "missed: " + "; ".join(failed)))
            print(f"  against none: {changed(sets, results['none'][1], results[lever][1])}")
        for lever in levers if args.forced else []:
            for value in ([LEVERS[lever][1:]] if lever == "prompt_gate" else [(v,) for v in LEVERS[lever][1:]]):
                forced = lever_rows(sets, lever, value, f" forced on at {value[0] if len(value) == 1 else 'any'}")
                print(f"  against none: {changed(sets, results['none'][1], forced[1])}")
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
