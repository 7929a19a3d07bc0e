"""What the gate sees of the related prompts it leaves silent and of the unrelated prompts it gives notes, held out
(issue 40, branch gate17).

Reads what ``benchmarks/hooks/hook_injection.py --save`` wrote. Per fold the relevance is fitted and the shipped rule
with its blend chosen on the other four folds of both sets, as benchmarks/hooks/unserved.py does; each held-out prompt
is then put in a group (related: ``served``, ``gate silent`` with evidence in recall's first three and the gate shut,
``unserved otherwise``; unrelated: its source, with ``given notes`` when the rule gives it any) and read on SIGNALS,
each something the store computes of its own answer (no dataset's formatting, no role).

Printed per set: each signal's 10th / 50th / 90th percentile by group; then, for a question asked both of its own
store (related) and of another (LongMemEval: every "another instance's question" is some instance's own question;
LoCoMo: another conversation's), the share of such pairs where its own store's value is the higher (ties count half),
over all pairs and over the pairs whose related prompt is gate silent; and every unrelated prompt given a candidate
whose content is an evidence turn of the same question in its own store (the labelling check: an "unrelated" prompt
whose store holds evidence of it).

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/gate_silent.py --load S.json[,S2.json,...]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds as folds  # noqa: E402
from benchmarks.hooks import gate_levers  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS  # noqa: E402
from benchmarks.hooks.unserved import SUPPORT_RELEVANCE  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402

SIGNALS = ("gate value", "best relevance", "learned of recall's first", "learned, first less second",
           "first's keyword", "first's coverage", "first's unseen_terms", "first three at the first's time",
           "distinct times in the first ten", "median relevance of the rest", "support")
SILENT = "gate silent"


def signals_of(grid: gate_levers.GateGrid, i: int, prompt: dict, weight: float) -> list[float]:
    """Prompt ``i``'s SIGNALS under a blend ``weight`` (the gate's), from recall's answer as saved."""
    ordered = folds.in_recall_order(prompt)
    first = ordered[0][2] if ordered else {}
    learned = [float(c[2].get("learned", 0.0)) for c in ordered]
    times = [prompt["memories"][c[0]]["timestamp"] for c in ordered]
    relevance = grid.relevance[i, :len(ordered)]
    return [(1.0 - weight) * grid.best[i] + weight * grid.first_learned[i], float(grid.best[i]),
            float(grid.first_learned[i]), learned[0] - learned[1] if len(learned) > 1 else 0.0,
            float(first.get("keyword", 0.0)), float(first.get("coverage", 0.0)), float(first.get("unseen_terms", 0.0)),
            float(sum(t == times[0] for t in times[1:3])), float(len(set(times[:10]))),
            float(np.median(np.sort(relevance)[::-1][1:])) if len(relevance) > 1 else 0.0,
            float((relevance >= SUPPORT_RELEVANCE).sum())]


def group_of(prompt: dict, gets_notes: bool, served: bool, silent: bool) -> str:
    if prompt["kind"] == "related":
        return "served" if served else (SILENT if silent else "unserved otherwise")
    return prompt["source"] + (", given notes" if gets_notes else "")


def held_out(sets: dict[str, list[dict]]) -> list[tuple[dict, str, list[float]]]:
    """Every prompt with its group and SIGNALS under the shipped rule chosen on the other folds (unserved.py's)."""
    both = [p for prompts in sets.values() for p in prompts]
    out = []
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = folds.fit_relevance(train, FITTED)
        rule = gate_levers.GateGrid(train, relevance).choose("blend")
        part = [p for p in both if p["fold"] == fold]
        grid = gate_levers.GateGrid(part, relevance)
        chosen, passes = grid.chosen_gate(rule), grid.passes(rule[0], *rule[4:])
        for i, p in enumerate(part):
            silent = bool(grid.evidence[i, :3].any()) and not passes[i]
            group = group_of(p, bool(chosen[i].any()), bool((chosen[i] & grid.evidence[i]).any()), silent)
            out.append((p, group, signals_of(grid, i, p, rule[5])))
    return out


def pair_shares(rows: list[tuple[dict, str, list[float]]]) -> tuple[list[float], list[float], int, int]:
    """Per signal, the share of questions asked of their own store (related) and of another (source "other") whose
    own store's value is the higher (ties half), over all such pairs and over those whose related prompt is gate
    silent; and the two pair counts."""
    asked: dict[tuple, dict] = defaultdict(dict)
    for p, group, values in rows:
        if p["source"] in ("question", "other"):
            asked[(p["set"], p["prompt"])]["own" if p["source"] == "question" else "other"] = (group, values)
    pairs = [(v["own"], v["other"]) for v in asked.values() if "own" in v and "other" in v]
    silent = [pair for pair in pairs if pair[0][0] == SILENT]

    def share(chosen: list) -> list[float]:
        if not chosen:
            return [float("nan")] * len(SIGNALS)
        own = np.array([a[1] for a, _ in chosen])
        other = np.array([b[1] for _, b in chosen])
        return list(((own > other) + 0.5 * (own == other)).mean(axis=0))
    return share(pairs), share(silent), len(pairs), len(silent)


def evidence_elsewhere(rows: list[tuple[dict, str, list[float]]]) -> list[tuple[dict, str, int]]:
    """Each unrelated prompt asked of another store that holds, among its candidates, a turn whose content is an
    evidence turn of the same question in its own store: (prompt, its group, how many such turns)."""
    evidence: dict[tuple, set[str]] = {}
    for p, _, _ in rows:
        if p["source"] == "question":
            evidence[(p["set"], p["prompt"])] = {str(p["memories"][m]["content"]) for m in p["evidence"]}
    found = []
    for p, group, _ in rows:
        if p["kind"] == "unrelated" and p["source"] == "other":
            texts = {str(memory["content"]) for memory in p["memories"].values()}
            shared = texts & evidence.get((p["set"], p["prompt"]), set())
            if shared:
                found.append((p, group, len(shared)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    args = parser.parse_args()
    sets = folds.load_saved(args.load)
    gate_levers.attach_learned(sets)
    rows = held_out(sets)
    for name in sets:
        mine = [r for r in rows if r[0]["set"] == name]
        groups = sorted({group for _, group, _ in mine})
        counts = {g: sum(group == g for _, group, _ in mine) for g in groups}
        print(f"\n{name}, held out: 10th / 50th / 90th percentile by group\n| signal | "
              + " | ".join(f"{g} ({counts[g]})" for g in groups) + " |\n|---|" + "---|" * len(groups))
        for s, signal in enumerate(SIGNALS):
            cells = [np.percentile([v[s] for _, group, v in mine if group == g], (10, 50, 90)) for g in groups]
            print(f"| {signal} | " + " | ".join(" / ".join(f"{x:.3g}" for x in c) for c in cells) + " |")
        every, silent, n_pairs, n_silent = pair_shares(mine)
        print(f"\n{name}: share of questions whose own store reads higher than another's ({n_pairs} pairs; "
              f"{n_silent} with the related prompt gate silent)\n| signal | all pairs | gate silent |\n|---|---|---|")
        for s, signal in enumerate(SIGNALS):
            print(f"| {signal} | {every[s]:.2f} | {silent[s]:.2f} |")
        for p, group, shared in evidence_elsewhere(mine):
            print(f"{name}: unrelated prompt holding {shared} evidence turn(s) of its question ({group}, fold "
                  f"{p['fold']}): {p['prompt'][:80]!r}")


if __name__ == "__main__":
    main()
