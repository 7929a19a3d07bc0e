"""The prompt hook on small project stores: the inject-or-not blend against relevance alone (issue 40, branch gate13).

A real user's project store is small; the dev stores hold 400-700 memories a scope, and since branch gate12 the
prompt hook's inject-or-not decision reads the learned ranking's own score of recall's first (``selection.gate_of``),
whose trees read pool features (places, gaps to the pool's best). This script asks the hook on cut stores no rule was
fitted to:

- LoCoMo dev, each conversation cut to its first ``--locomo-turns`` turns (10, 30, 100), asked as
  ``hook_prompts.locomo_prompts`` asks (related: the questions with evidence among the kept turns; unrelated:
  another conversation's questions and the off-topic ones);
- LongMemEval dev, each of the 80 instances cut to its first ``--lme-sessions`` sessions (1, 3, 10, 20). Related:
  an answerable question only when every evidence turn falls inside the cut (else it is not asked); unrelated as
  ``hook_prompts.lme_prompts`` asks them (the ``_abs`` questions, the next instance's question, 10 off-topic ones).

Each cut is saved as ``hook_injection.py --save`` saves (``--save-dir``; ``--load-dir`` replays). Reported per cut,
quiet / related served / notes per related prompt / share of notes that are evidence / tokens per injection:

- **as the hook answers** (the packaged relevance, the hook's floor): the shipped rule (blend 0.5 against the floor
  less 0.06) against relevance alone (blend 0), replayed with ``selection.choose`` on the saved candidates (the
  replayed blend is checked against what the hook injected live), with the related prompts each gains and loses and
  the unrelated prompts each lets in;
- **held out** (``--full S.json``, a full ``hook_injection.py --save``): per fold, relevance fitted and the rule
  chosen on the other four folds of both *full* dev sets (gate_levers.GateGrid: lever ``none`` and ``blend``),
  measured on the fold's prompts of the cut; and fitted on one full set, measured on the other set's cuts. The full
  sets themselves close the table (gate_levers.py's held-out headline and across-set rows, with the guards).

``--guards`` adds store-independent guards on the blend (docs/results/history.md, branch gate13, pre-registered),
each read from the number of results recall returned to the hook for the prompt (``n``; the hook asks for 20):

- ``min20``: no blend (relevance alone against the floor) when recall returned fewer than 20 results;
- ``scaled``: the blend's weight and its drop of the floor times min(1, n / 20).

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/small_stores.py --save-dir DIR [--full S.json] [--guards]
    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/small_stores.py --load-dir DIR [--full S.json] [--guards]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds as folds  # noqa: E402
from benchmarks.hooks import gate_levers  # noqa: E402
from benchmarks.hooks.hook_injection import HEADING, measure  # noqa: E402
from benchmarks.common.hook_prompts import (  # noqa: E402
    DATA, FOLDS, LME_POSITIONS, ask_instance, lme_instances, lme_store, locomo_prompts, memories_of)
from benchmarks.quality import locomo  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402
from localmem.hooks.selection import DEFAULT_BLEND, DEFAULT_BLEND_DROP, KEPT, Candidate, StandOut, choose  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402

LOCOMO_TURNS = (10, 30, 100)
LME_SESSIONS = (1, 3, 10, 20)
FULL_LIST = 20  # the hook asks recall for this many results (events.CANDIDATES)
GUARDS = ("min20", "scaled")
BUDGET = 1500


def guard_scale(guard: str | None, n: int) -> float:
    """How much of the blend a prompt keeps under ``guard``, given the ``n`` results recall returned (1: all)."""
    if guard == "min20":
        return 1.0 if n >= FULL_LIST else 0.0
    if guard == "scaled":
        return min(1.0, n / FULL_LIST)
    return 1.0


def blend_of(guard: str | None, p: dict) -> tuple[float, float]:
    """The (blend, drop) the hook's gate reads for ``p`` under ``guard`` (``"none"``: relevance alone; None: the
    shipped blend unguarded)."""
    scale = 0.0 if guard == "none" else guard_scale(guard, results_of(p))
    return DEFAULT_BLEND * scale, DEFAULT_BLEND_DROP * scale


def results_of(p: dict) -> int:
    """How many results recall returned for the prompt (its saved scores: recall's first 20 in the scope)."""
    return len(p.get("scores") or {})


def lme_cut_prompts(path: Path, embedder: str, sessions: int, work: Path, settings: HookSettings) -> list[dict]:
    """The 80 LongMemEval instances cut to their first ``sessions`` sessions (module docstring); folds as
    hook_prompts.lme_prompts (the instance's place mod 5)."""
    chosen = lme_instances(path, list(LME_POSITIONS))
    cached = locomo.cached_embedder(embedder)
    (work / "lme").mkdir(exist_ok=True)
    prompts = []
    for index, instance in enumerate(chosen):
        cut = {**instance, "haystack_sessions": instance["haystack_sessions"][:sessions],
               "haystack_dates": instance["haystack_dates"][:sessions]}
        store, evidence = lme_store(cut, cached)
        memories = memories_of(store)
        unanswerable = instance["question_id"].endswith("_abs")
        outside = any(t.get("has_answer") for s in instance["haystack_sessions"][sessions:] for t in s)
        prompts += ask_instance(store, memories, work / "lme", chosen, index, evidence, settings,
                                ask_question=unanswerable or bool(evidence and not outside))
        store.close()
    return prompts


def ask_cuts(args: argparse.Namespace) -> dict[str, dict[str, list[dict]]]:
    """Every cut asked through the hook with the shipped settings, saved in ``args.save_dir``."""
    settings = HookSettings()
    cuts: dict[str, dict[str, list[dict]]] = {}
    args.save_dir.mkdir(parents=True, exist_ok=True)
    for turns in args.locomo_turns:
        work = Path(tempfile.mkdtemp(prefix="small-stores-"))
        try:
            started = time.perf_counter()
            cuts[f"locomo-{turns}"] = {"locomo": locomo_prompts(args.locomo, args.embedder, 40, work, settings, turns)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"  locomo, first {turns} turns: {time.perf_counter() - started:.0f} s", flush=True)
    for sessions in args.lme_sessions:
        work = Path(tempfile.mkdtemp(prefix="small-stores-"))
        try:
            started = time.perf_counter()
            cuts[f"lme-{sessions}"] = {"lme": lme_cut_prompts(args.lme_data, args.embedder, sessions, work, settings)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"  lme, first {sessions} sessions: {time.perf_counter() - started:.0f} s", flush=True)
    for name, sets in cuts.items():
        (args.save_dir / f"{name}.json").write_text(json.dumps(sets, default=sorted), "utf-8")
    return {name: folds.load_saved(str(args.save_dir / f"{name}.json")) for name in cuts}


def as_answered(p: dict, blend: float, drop: float) -> tuple[list[str], int]:
    """The notes the hook injects for ``p`` with its saved (packaged) relevance and floor and the shipped rule,
    the gate's blend ``blend`` and drop ``drop``; and the block's tokens."""
    scores, components = p.get("scores", {}), p.get("components", {})
    settings = HookSettings()
    candidates = [Candidate(c[0], c[1], p["memories"][c[0]], rank=c[3], score=scores.get(c[0]),
                            learned=(components.get(c[0]) or {}).get("learned")) for c in p["candidates"]]
    choose(candidates, StandOut(p["floor"], settings.standout_lead, settings.standout_close, settings.max_memories,
                                settings.standout_order, settings.note_floor, settings.standout_margin, blend, drop))
    block, ids = build_block([c.memory for c in candidates if c.reason == KEPT], HEADING, BUDGET,
                             settings.max_memories)
    return ids, estimate_tokens(block) if block else 0


def row(name: str, m: dict[str, float]) -> str:
    return (f"| {name} | {m['quiet']:.3f} ({m['unrelated']}) | {m['hit']:.3f} ({m['related']}) | {m['notes']:.2f} | "
            f"{m['precision']:.3f} | {m['tokens']:.0f} |")


HEADER = ("| | quiet (n) | related served (n) | notes per related prompt | share of notes evidence | tokens | "
          "related gained / lost against relevance alone | unrelated let in / kept out against it |\n"
          "|---|---|---|---|---|---|---|---|")


def against(prompts: list[dict], chosen: dict[int, list[str]], base: dict[int, list[str]]) -> str:
    """The related prompts ``chosen`` serves that ``base`` does not and the reverse; the unrelated ones it gives
    notes that ``base`` keeps silent and the reverse."""
    served = [(bool(set(chosen[id(p)]) & p["evidence"]), bool(set(base[id(p)]) & p["evidence"]))
              for p in prompts if p["kind"] == "related"]
    noisy = [(bool(chosen[id(p)]), bool(base[id(p)])) for p in prompts if p["kind"] == "unrelated"]
    return (f" {sum(a and not b for a, b in served)} / {sum(b and not a for a, b in served)} |"
            f" {sum(a and not b for a, b in noisy)} / {sum(b and not a for a, b in noisy)} |")


def answered_rows(cuts: dict[str, dict[str, list[dict]]], guards: list[str]) -> None:
    print("\nAs the hook answers (packaged relevance, the hook's floor; the shipped rule replayed):\n" + HEADER)
    for name, sets in cuts.items():
        prompts = [p for ps in sets.values() for p in ps]
        variants = {"relevance alone": "none", "blend (shipped)": None, **{f"blend, guard {g}": g for g in guards}}
        answers = {label: {id(p): as_answered(p, *blend_of(guard, p)) for p in prompts}
                   for label, guard in variants.items()}
        live = sum(sorted(answers["blend (shipped)"][id(p)][0]) != sorted(p["shipped_ids"]) for p in prompts)
        small = sum(results_of(p) < FULL_LIST for p in prompts)
        print(f"| **{name}** ({small} of {len(prompts)} prompts with under {FULL_LIST} results; "
              f"replayed blend ≠ live: {live}) | | | | | | | |")
        base = {k: v[0] for k, v in answers["relevance alone"].items()}
        for label, answer in answers.items():
            ids, tokens = {k: v[0] for k, v in answer.items()}, {k: v[1] for k, v in answer.items()}
            print(row(label, measure(prompts, ids, tokens)) + (" |  |" if label == "relevance alone"
                                                               else against(prompts, ids, base)))


class GuardedGrid(gate_levers.GateGrid):
    """GateGrid whose ``blend`` lever keeps, per prompt, ``guard_scale`` of its weight and of its drop of the floor
    (the drop: the fold's relevance-alone floor less its blend floor)."""

    def __init__(self, prompts: list[dict], relevance: Callable[[dict], float], guard: str | None, plain: float):
        super().__init__(prompts, relevance)
        self.scale = np.array([guard_scale(guard, results_of(p)) for p in prompts])
        self.plain = plain

    def passes(self, floor: float, lever: str, a: float, b: float) -> np.ndarray:
        if lever != "blend":
            return super().passes(floor, lever, a, b)
        w = a * self.scale
        return (1.0 - w) * self.best + w * self.first_learned >= self.plain - self.scale * (self.plain - floor)


def guarded_blocks(prompts: list[dict], relevance, rule: tuple, guard: str | None, plain: float
                   ) -> tuple[dict[int, list[str]], dict[int, int]]:
    """gate_levers.blocks with a guard (the notes each prompt gets and their tokens)."""
    grid = GuardedGrid(prompts, relevance, guard, plain)
    chosen = grid.chosen_gate(rule)
    ids, tokens = {}, {}
    for i, p in enumerate(prompts):
        picked = [c[0] for j, c in enumerate(folds.in_recall_order(p)) if chosen[i, j]]
        block, ids[id(p)] = build_block([p["memories"][m] for m in picked], HEADING, BUDGET, rule[2])
        tokens[id(p)] = estimate_tokens(block) if block else 0
    return ids, tokens


def held_out_rows(cuts: dict[str, dict[str, list[dict]]], full: dict[str, list[dict]], guards: list[str]) -> None:
    """Per fold: relevance and rules (none, blend) fitted on the other folds of both full sets, measured on the
    fold's prompts of each cut; and across sets (fitted on one full set, measured on the other's cuts)."""
    both = [p for ps in full.values() for p in ps]
    fits: dict[object, tuple] = {}
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = folds.fit_relevance(train, FITTED)
        grid = gate_levers.GateGrid(train, relevance)
        fits[fold] = (relevance, grid.choose("none"), grid.choose("blend"))
    for source in full:
        relevance = folds.fit_relevance(full[source], FITTED)
        grid = gate_levers.GateGrid(full[source], relevance)
        fits[source] = (relevance, grid.choose("none"), grid.choose("blend"))
    print("\nrules chosen on the full sets (floor, note floor, cap, margin, lever, a, b): " + "; ".join(
        f"{k}: {v[1]} / {v[2]}" for k, v in fits.items()))
    for title, key_of in (("Held out (relevance and rule fitted on the other four folds of both full dev sets)",
                           lambda p: p["fold"]),
                          ("Across sets (fitted on the other full dev set)",
                           lambda p: "lme" if p["set"] == "locomo" else "locomo")):
        print(f"\n{title}:\n" + HEADER)
        for name, sets in cuts.items():
            prompts = [p for ps in sets.values() for p in ps]
            answers: dict[str, tuple[dict, dict]] = {}
            for label, guard in [("relevance alone", "none"), ("blend", None)] + [(f"blend, guard {g}", g)
                                                                                    for g in guards]:
                ids, tokens = {}, {}
                for key in sorted({key_of(p) for p in prompts}, key=str):
                    part = [p for p in prompts if key_of(p) == key]
                    relevance, plain, blended = fits[key]
                    rule = plain if guard == "none" else blended
                    got = guarded_blocks(part, relevance, rule, None if guard == "none" else guard, plain[0])
                    ids.update(got[0])
                    tokens.update(got[1])
                answers[label] = (ids, tokens)
            print(f"| **{name}** | | | | | | | |")
            for label, (ids, tokens) in answers.items():
                print(row(label, measure(prompts, ids, tokens)) + (" |  |" if label == "relevance alone"
                                                                   else against(prompts, ids,
                                                                                answers["relevance alone"][0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev.json")
    parser.add_argument("--lme-data", type=Path, default=DATA / "lme-dev.json")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--locomo-turns", default=",".join(map(str, LOCOMO_TURNS)),
                        help="LoCoMo cuts: each conversation's first this many turns (comma-separated)")
    parser.add_argument("--lme-sessions", default=",".join(map(str, LME_SESSIONS)),
                        help="LongMemEval cuts: each instance's first this many sessions (comma-separated)")
    parser.add_argument("--save-dir", type=Path, help="ask every cut through the hook and save it here")
    parser.add_argument("--load-dir", type=Path, help="replay the cuts saved here by --save-dir")
    parser.add_argument("--full", help="a full hook_injection.py --save of both dev sets: also the held-out rows")
    parser.add_argument("--guards", action="store_true", help=f"also the pre-registered guards ({', '.join(GUARDS)})")
    args = parser.parse_args()
    if bool(args.save_dir) == bool(args.load_dir):
        parser.error("give one of --save-dir DIR (ask the cuts) or --load-dir DIR (replay them)")
    try:
        args.locomo_turns = [int(t) for t in args.locomo_turns.split(",") if t]
        args.lme_sessions = [int(s) for s in args.lme_sessions.split(",") if s]
    except ValueError:
        parser.error("--locomo-turns and --lme-sessions take comma-separated whole numbers")
    if any(t < 1 for t in args.locomo_turns + args.lme_sessions):
        parser.error("--locomo-turns and --lme-sessions take numbers from 1")
    started = time.perf_counter()
    if args.save_dir:
        cuts = ask_cuts(args)
    else:
        names = [f"locomo-{t}" for t in args.locomo_turns] + [f"lme-{s}" for s in args.lme_sessions]
        missing = [n for n in names if not (args.load_dir / f"{n}.json").exists()]
        if missing:
            parser.error(f"no saved cut {', '.join(missing)} in {args.load_dir}")
        cuts = {n: folds.load_saved(str(args.load_dir / f"{n}.json")) for n in names}
    guards = list(GUARDS) if args.guards else []
    answered_rows(cuts, guards)
    if args.full:
        full = folds.load_saved(args.full)
        gate_levers.attach_learned(full)
        for sets in cuts.values():
            gate_levers.attach_learned(sets)
        # The full dev sets themselves last: the held-out headline and the across-set rows, for the guards' rule.
        whole = {**cuts, "full locomo": {"locomo": full["locomo"]}, "full lme": {"lme": full["lme"]}, "full both": full}
        held_out_rows(whole, full, guards)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
