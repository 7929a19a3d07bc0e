"""What the prompt hook injects, on both dev sets, and the stand-out rule's parameters chosen on held-out folds.

Stores (all-MiniLM-L6-v2 through the shared embedding cache, ``--embedder``):

- LoCoMo dev (``../shared/data/locomo-dev.json``): one store, every turn a memory, each
  conversation its own project (``project:conv-26`` …). Related prompts: the category 1-4
  questions with evidence, asked from their conversation's folder. Unrelated: the same
  questions asked from another conversation's folder, and the 40 off-topic questions of
  benchmarks/confidence_calibration.py in every conversation.
- LongMemEval dev (``../shared/data/lme-dev.json``): each instance its own store, every turn
  of its haystack a memory (no role prefix; the role in metadata, as capture stores it).
  Related: the instance's question (evidence: the turns marked ``has_answer``). Unrelated:
  the ``_abs`` questions (their answer was never stored), each instance's question asked of
  the next instance's store (related instead, with those turns as evidence, when that store holds
  one of the question's evidence turns: the haystacks share sessions), and 10 of the off-topic
  questions per store. The instances are
  ``--lme`` positions in the set ordered by (answerable, sha256 of the question id): by
  default all 80, the six ``_abs`` ones and 74 answerable ones.

Every prompt goes through ``answer_hook_with_report(store, "UserPromptSubmit", …)`` in a fresh
session with the shipped settings; its report holds every candidate's relevance, so other
parameters of the stand-out rule (``localmem/hooks/selection.py``) are replayed on the same
candidates with the same ``choose`` and ``build_block``. Folds: LoCoMo's five conversations,
LongMemEval's instances by index mod 5. Reported:

- as the hook answered, and the best three over the hook's floor;
- where each related prompt's evidence was lost (``misses``: not recalled, recalled below third
  place, in the first three but under the floor, over it but not chosen);
- **held out together** (benchmarks/common/injection_folds.py): per fold, a relevance model fitted on
  the other folds' candidates (``--inputs`` names its inputs) and the floor, lead, close and cap
  (1-3) chosen on the same other folds (injection_folds.objective: >= 0.95 of unrelated prompts
  silent, then >= 0.5 of injected notes evidence, then the most related prompts served), measured
  on the fold; and across sets: fitted on one set, measured on the other;
- the selection alone held out, the relevance as answered, with the hook's floor or the floor chosen too;
- the shipped rule, notes in recall's order (injection_folds.RecallOrderGrid: inject when the best relevance
  clears the floor, then recall's first ``cap`` over the note floor), held out the same way, with the misses and
  the share of each kind of unrelated prompt kept quiet; and the ceiling of a perfect prompt-level decision
  (every related prompt served its first 1-3 candidates, every unrelated one nothing);
- with ``--gate-inputs``, a prompt gate (injection_folds.fit_gate: a logistic over the best candidate's inputs
  deciding whether to inject at all) fitted and held out the same way (the stand-out rule, and the recall-order
  rule with the gate's floor chosen per fold);
- the recall-order rule with a second note only when recall's second scores at least a margin × its first
  (injection_folds.RecallOrderGrid.choose_margin), held out the same way; and again with a share guard (the
  rule chosen on the lowest share of notes that are evidence of either set, not the pooled share).

Since branch gate5 a save also holds each prompt's keywords with their counts in the scope and recall's scores
of the scope's first 20, so ``--inputs``/``--gate-inputs`` may also name benchmarks/common/prompt_terms.py's
variants of ``unseen_terms`` (``unseen_lower``: lowercase words only; clipped, binary, and times the cosine).

Each candidate's relevance inputs and place in recall's answer are saved with it (``--save``), so
``--load FILE --rescore`` replays the hook's choice with a refitted relevance model (the packaged
relevance.json) and the hook's floor without building a store: the candidates are recall's top 20,
which relevance does not rank.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/hook_injection.py [--lme 0,1,2,...] [--per-conversation 40]
        [--sets locomo,lme] [--save FILE | --load FILE[,FILE] [--rescore]] [--inputs cosine,coverage,...]
        [--gate-inputs relevance,unseen_terms,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from localmem import Config  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402
from localmem.hooks.content_free import NOTE_REASONS  # noqa: E402
from localmem.hooks.selection import KEPT, Candidate, StandOut, choose, injection_floor  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from localmem.recall.relevance_model import FEATURES, relevance_features, relevance_of  # noqa: E402
from benchmarks.common import injection_folds, prompt_terms  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402
from benchmarks.common.hook_prompts import (  # noqa: E402
    DATA, FOLDS, LME_POSITIONS, lme_prompts, locomo_prompts)

HEADING = "Notes that may bear on this prompt (project p):"


def rescore(prompt: dict, settings: HookSettings) -> None:
    """The prompt's candidates with their relevance read anew from their inputs (a refitted model), and
    what the hook would now inject with ``settings`` in place of what it injected when they were saved."""
    prompt["candidates"] = [(m, relevance_of(relevance_features(**{k: inputs.get(k, 0.0) for k in FEATURES})), inputs,
                             *rest) for m, _, inputs, *rest in prompt["candidates"]]
    prompt["floor"] = injection_floor(settings.relevance_floor, Config.from_env())
    prompt["shipped_ids"], prompt["shipped_tokens"] = replay(
        prompt, settings.standout_lead, settings.standout_close, None, settings.max_memories,
        order=settings.standout_order, note_floor=settings.note_floor, margin=settings.standout_margin)


def replay(prompt: dict, lead: float, close: float, floor: float | None = None, cap: int = 3,
           budget: int = 1500, order: str = "relevance", note_floor: float | None = None,
           margin: float = 0.0) -> tuple[list[str], int]:
    """The ids the hook would inject with these parameters (floor None: recall's; ``order``, ``note_floor`` and
    ``margin``: selection.StandOut's, the margin read on the saved recall ``scores``), and the block's tokens."""
    scores, components = prompt.get("scores", {}), prompt.get("components", {})
    candidates = [Candidate(c[0], c[1], prompt["memories"][c[0]], rank=c[3] if len(c) > 3 else None,
                            score=scores.get(c[0]), learned=(components.get(c[0]) or {}).get("learned"))
                  for c in prompt["candidates"]]
    choose(candidates, StandOut(prompt["floor"] if floor is None else floor, lead, close, cap, order, note_floor,
                                margin))
    kept = [c.memory for c in candidates if c.reason == KEPT]
    block, ids = build_block(kept, HEADING, budget, cap)
    return ids, estimate_tokens(block) if block else 0


def measure(prompts: list[dict], chosen: dict[int, list[str]] | None = None,
            tokens: dict[int, int] | None = None) -> dict[str, float]:
    related = [p for p in prompts if p["kind"] == "related"]
    unrelated = [p for p in prompts if p["kind"] == "unrelated"]
    injected = {id(p): chosen[id(p)] for p in prompts}
    hit = sum(1 for p in related if set(injected[id(p)]) & p["evidence"])
    notes = [len(injected[id(p)]) for p in related]
    evidence_notes = sum(len(set(injected[id(p)]) & p["evidence"]) for p in related)
    spent = [tokens[id(p)] for p in prompts if injected[id(p)]]
    return {"related": len(related), "unrelated": len(unrelated),
            "quiet": sum(1 for p in unrelated if not injected[id(p)]) / max(1, len(unrelated)),
            "hit": hit / max(1, len(related)), "notes": statistics.fmean(notes) if notes else 0.0,
            "precision": evidence_notes / max(1, sum(notes)),
            "tokens": statistics.fmean(spent) if spent else 0.0}


def evaluate(prompts: list[dict], params: tuple) -> dict[str, float]:
    chosen, tokens = {}, {}
    for p in prompts:
        chosen[id(p)], tokens[id(p)] = replay(p, *params)
    return measure(prompts, chosen, tokens)


def fit(prompts: list[dict], floors: tuple = (None,)) -> tuple:
    """The (lead, close, floor, cap) chosen on ``prompts`` as they were scored (injection_folds.objective:
    >= 0.95 of unrelated prompts quiet, then related prompts served plus evidence share); floor None: recall's."""
    floor = prompts[0]["floor"]
    lead, close, chosen, cap = injection_folds.choose_rule(
        injection_folds.StandOutGrid(prompts), [floor if f is None else f for f in floors])
    return lead, close, None if floors == (None,) else chosen, cap


def held_out(prompts: list[dict], floors: tuple = (None,)) -> tuple[dict[str, float], list[tuple]]:
    """Selection alone held out: the rule chosen on four folds (relevance as saved), measured on the fifth."""
    chosen, tokens, params = {}, {}, []
    for fold in range(FOLDS):
        params.append(fit([p for p in prompts if p["fold"] != fold], floors))
        for p in prompts:
            if p["fold"] == fold:
                chosen[id(p)], tokens[id(p)] = replay(p, *params[-1])
    return measure(prompts, chosen, tokens), params


def misses(prompts: list[dict], decided: dict[int, tuple[list[str], dict[str, float], float]] | None = None
           ) -> dict[str, int]:
    """Where each related prompt's evidence was lost: (i) no evidence turn among recall's candidates; (ii) the
    best-placed one below recall's third place; (iii) in the first three but under the floor (or, with a prompt
    gate, the gate said no); (iv) in the first three and over the floor, but not chosen (not close to the best, or
    over the cap). ``decided``: per prompt (by id) the ids injected, each candidate's relevance and the floor, as
    held out; None: as the hook answered (saved relevance and floor)."""
    counts = dict.fromkeys(("served", "(i) not recalled", "(ii) recalled below third place",
                            "(iii) top three, under the floor", "(iv) top three, over the floor, not chosen"), 0)
    for p in prompts:
        if p["kind"] != "related":
            continue
        if decided is None:
            injected, relevance, floor = p["shipped_ids"], {c[0]: c[1] for c in p["candidates"]}, p["floor"]
        else:
            injected, relevance, floor = decided[id(p)]
        places = [c[3] for c in p["candidates"] if c[0] in p["evidence"] and len(c) > 3 and c[3] is not None]
        if set(injected) & p["evidence"]:
            counts["served"] += 1
        elif not places:
            counts["(i) not recalled"] += 1
        elif min(places) > 3:
            counts["(ii) recalled below third place"] += 1
        elif max(relevance[c[0]] for c in p["candidates"] if c[0] in p["evidence"]) < floor:
            counts["(iii) top three, under the floor"] += 1
        else:
            counts["(iv) top three, over the floor, not chosen"] += 1
    return counts


def decide(p: dict, relevance, rule: tuple, gate=None) -> tuple[list[str], dict[str, float], float, int]:
    """What the hook injects for ``p`` with this relevance, rule (lead, close, floor, cap[, gate floor]) and
    prompt gate: (ids, each candidate's relevance, the floor, the block's tokens). A gate under its floor
    injects nothing (counted under the floor in ``misses``: every candidate then reads 0)."""
    lead, close, floor, cap, *gate_floor = rule
    scores = {m: relevance(inputs) for m, _, inputs, *_ in p["candidates"]}
    if gate is not None and gate_floor and gate(p) < gate_floor[0]:
        return [], dict.fromkeys(scores, 0.0), floor, 0
    ids, tokens = replay({**p, "candidates": [(m, scores[m], None) for m, *_ in p["candidates"]]},
                         lead, close, floor, cap)
    return ids, scores, floor, tokens


def held_out_rows(title: str, sets: dict[str, list[dict]], header: str, fitted_for, fitted_on) -> None:
    """The rows of one held-out scheme: ``fitted_for(p)`` is (relevance, rule, gate or None) fitted without
    ``p``'s fold; ``fitted_on(train)`` the same fitted on one whole set (to measure on the other)."""
    both = [p for prompts in sets.values() for p in prompts]
    decided = {id(p): decide(p, *fitted_for(p)) for p in both}
    print(f"\n{title}:\n{header}")
    for name, prompts in [*sets.items(), ("both", both)]:
        print(row(name, measure(prompts, {id(p): decided[id(p)][0] for p in prompts},
                                {id(p): decided[id(p)][3] for p in prompts})))
    for name, prompts in [*sets.items(), ("both", both)]:
        print(f"  misses, {name}: " + ", ".join(f"{k} {v}" for k, v in misses(
            prompts, {id(p): decided[id(p)][:3] for p in prompts}).items()) + "; quiet by kind: " + ", ".join(
            f"{k} {v:.3f}" for k, v in quiet_by_kind(prompts, {id(p): decided[id(p)][0] for p in prompts}).items()))
    print(f"Across sets ({title.split(':')[0].lower()}), fitted on one set, measured on the other:\n{header}")
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance, rule, gate = fitted_on(sets[source])
            across = {id(p): decide(p, relevance, rule, gate) for p in sets[target]}
            print(row(f"fit on {source} {tuple(round(v, 3) for v in rule)} → {target}",
                      measure(sets[target], {k: v[0] for k, v in across.items()}, {k: v[3] for k, v in across.items()})))
            print("  misses: " + ", ".join(f"{k} {v}" for k, v in misses(
                sets[target], {k: v[:3] for k, v in across.items()}).items()))


def gated_rows(sets: dict[str, list[dict]], header: str, features: tuple[str, ...],
               gate_features: tuple[str, ...]) -> None:
    """Held out together with a prompt gate (injection_folds.gated_on): relevance, gate and rule with the gate's
    floor fitted on four folds, measured on the fifth; and across sets."""
    both = [p for prompts in sets.values() for p in prompts]
    per_fold = {}
    for fold in range(FOLDS):
        relevance, gate, rule = injection_folds.gated_on([p for p in both if p["fold"] != fold], features,
                                                         gate_features)
        per_fold[fold] = (relevance, rule, gate)
        print(f"  fold {fold}: rule {rule}, gate " + ", ".join(
            f"{k} {v:.3f}" for k, v in gate.coefficients.items()), flush=True)

    def on(train: list[dict]) -> tuple:
        relevance, gate, rule = injection_folds.gated_on(train, features, gate_features)
        return relevance, rule, gate
    held_out_rows(f"Held out together with a prompt gate over the best candidate's {', '.join(gate_features)} "
                  f"(relevance {', '.join(features)})", sets, header, lambda p: per_fold[p["fold"]], on)


def nested_rows(sets: dict[str, list[dict]], header: str, features: tuple[str, ...]) -> None:
    """Relevance, floor and rule fitted on four folds of both sets, measured on the fifth; and across sets."""
    both = [p for prompts in sets.values() for p in prompts]
    relevance_for, rule_for, rules = injection_folds.nested(both, FOLDS, features)
    print(f"\nper fold (lead, close, floor, cap): {rules}")

    def on(train: list[dict]) -> tuple:
        relevance, rule = injection_folds.fitted_on(train, features)
        return relevance, rule, None
    held_out_rows(f"Held out together: relevance model ({', '.join(features)}, fitted on the hook's candidates), "
                  f"floor, lead, close and cap chosen on four folds of both sets, measured on the fifth", sets, header,
                  lambda p: (relevance_for[id(p)], rule_for[id(p)], None), on)


def recall_order_rows(sets: dict[str, list[dict]], header: str, features: tuple[str, ...],
                      gate_features: tuple[str, ...] = ()) -> None:
    """The recall-order rule (injection_folds.RecallOrderGrid) held out the same way, and the ceiling a perfect
    prompt-level decision would reach on these candidates (relevance held out). With ``gate_features``, a prompt
    gate over them (injection_folds.fit_gate) decides whether, its floor chosen per fold with the rest."""
    both = [p for prompts in sets.values() for p in prompts]
    relevance_of_fold = {fold: injection_folds.fit_relevance([p for p in both if p["fold"] != fold], features)
                         for fold in range(FOLDS)}

    def fitted(train: list[dict], relevance) -> tuple[tuple, Any]:
        """The rule (and the gate, or None) chosen on ``train``."""
        if not gate_features:
            return injection_folds.RecallOrderGrid(train, relevance).choose(), None
        gate = injection_folds.fit_gate(train, relevance, gate_features)
        return injection_folds.RecallOrderGrid(train, relevance, gate).choose_gated(), gate
    fits = {fold: fitted([p for p in both if p["fold"] != fold], relevance_of_fold[fold]) for fold in range(FOLDS)}
    rules = {fold: rule for fold, (rule, _) in fits.items()}
    gates = {fold: gate for fold, (_, gate) in fits.items()}

    def injected(prompts: list[dict], relevance, rule, gate=None) -> dict[int, tuple[list[str], int]]:
        """Each prompt's notes and the block's tokens (the hook's budget, as ``replay``)."""
        chosen = injection_folds.RecallOrderGrid(prompts, relevance, gate).chosen(*rule)
        out = {}
        for i, p in enumerate(prompts):
            ids = [c[0] for j, c in enumerate(injection_folds.in_recall_order(p)) if chosen[i, j]]
            block, kept = build_block([p["memories"][m] for m in ids], HEADING, 1500, rule[2])
            out[id(p)] = (kept, estimate_tokens(block) if block else 0)
        return out
    def judged(p: dict, relevance, rule, gate=None) -> tuple[list[str], dict[str, float], float]:
        """For ``misses``: a prompt the floor or the gate refused reads 0 throughout (under the floor)."""
        scores = {c[0]: relevance(c[2]) for c in p["candidates"]}
        gated = not scores or max(scores.values()) < rule[0] or (gate is not None and gate(p) < rule[3])
        return chosen[id(p)], dict.fromkeys(scores, 0.0) if gated else scores, rule[1]
    answered: dict[int, tuple[list[str], int]] = {}
    for fold in range(FOLDS):
        answered.update(injected([p for p in both if p["fold"] == fold], relevance_of_fold[fold], rules[fold],
                                 gates[fold]))
    chosen = {k: v[0] for k, v in answered.items()}
    tokens = {k: v[1] for k, v in answered.items()}
    gated = f"; a prompt gate over {', '.join(gate_features)}" if gate_features else ""
    print(f"\nRecall-order rule held out together (inject when the best relevance clears the floor, then recall's "
          f"first cap candidates over the note floor; relevance {', '.join(features)}{gated}):\n{header}")
    for name, prompts in [*sets.items(), ("both", both)]:
        print(row(name, measure(prompts, chosen, tokens)))
    print(f"per fold (floor, note floor, cap): {list(rules.values())}")
    for name, prompts in [*sets.items(), ("both", both)]:
        decided = {id(p): judged(p, relevance_of_fold[p["fold"]], rules[p["fold"]], gates[p["fold"]]) for p in prompts
                   if p["kind"] == "related"}
        quiet = quiet_by_kind(prompts, chosen)
        print(f"  misses, {name}: " + ", ".join(f"{k} {v}" for k, v in misses(prompts, decided).items())
              + "; quiet by kind: " + ", ".join(f"{k} {v:.3f}" for k, v in quiet.items()))
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance = injection_folds.fit_relevance(sets[source], features)
            rule, gate = fitted(sets[source], relevance)
            across = injected(sets[target], relevance, rule, gate)
            print(row(f"fit on {source} {rule} → {target}", measure(sets[target], {k: v[0] for k, v in across.items()},
                                                                   {k: v[1] for k, v in across.items()})))
    print("\nThe ceiling of a perfect prompt-level decision (related prompts get their first cap candidates, unrelated "
          "nothing; relevance held out): evidence injected / share of notes that are evidence")
    for name, prompts in [*sets.items(), ("both", both)]:
        for order in ("relevance", "recall"):
            print(f"  {name}, {order} order: " + "; ".join(
                "cap {0}: {1[hit]:.3f} / {1[precision]:.3f}".format(cap, _pooled(prompts, relevance_of_fold, cap, order))
                for cap in injection_folds.CAPS))


def margin_rows(sets: dict[str, list[dict]], header: str, features: tuple[str, ...], share_guard: bool = False) -> None:
    """The recall-order rule with cap 1 unless recall's second stands close to its first (score ratio over a margin;
    injection_folds.RecallOrderGrid.choose_margin), held out together and across sets; with ``share_guard``, chosen
    on the lowest share of notes that are evidence of any one set."""
    both = [p for prompts in sets.values() for p in prompts]

    def injected(prompts: list[dict], relevance, rule) -> tuple[dict[int, list[str]], dict[int, int]]:
        chosen = injection_folds.RecallOrderGrid(prompts, relevance).chosen_margin(*rule)
        ids, tokens = {}, {}
        for i, p in enumerate(prompts):
            picked = [c[0] for j, c in enumerate(injection_folds.in_recall_order(p)) if chosen[i, j]]
            block, ids[id(p)] = build_block([p["memories"][m] for m in picked], HEADING, 1500, rule[2])
            tokens[id(p)] = estimate_tokens(block) if block else 0
        return ids, tokens
    ids, tokens, rules = {}, {}, []
    for fold in range(FOLDS):
        train = [p for p in both if p["fold"] != fold]
        relevance = injection_folds.fit_relevance(train, features)
        rules.append(injection_folds.RecallOrderGrid(train, relevance).choose_margin(share_guard))
        got = injected([p for p in both if p["fold"] == fold], relevance, rules[-1])
        ids.update(got[0])
        tokens.update(got[1])
    guarded = ", the share guarded in each set" if share_guard else ""
    print(f"\nRecall-order rule, a second note only when recall's second scores at least the margin × its first{guarded}, "
          f"held out together (relevance {', '.join(features)}):\n{header}")
    for name, prompts in [*sets.items(), ("both", both)]:
        print(row(name, measure(prompts, ids, tokens)))
    print(f"per fold (floor, note floor, cap, margin): {rules}")
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance = injection_folds.fit_relevance(sets[source], features)
            rule = injection_folds.RecallOrderGrid(sets[source], relevance).choose_margin(share_guard)
            print(row(f"fit on {source} {rule} → {target}", measure(sets[target], *injected(sets[target], relevance, rule))))


def quiet_by_kind(prompts: list[dict], chosen: dict[int, list[str]]) -> dict[str, float]:
    """The share of each kind of unrelated prompt (another scope's question, off-topic, abstention) that got nothing."""
    kinds = sorted({p["source"] for p in prompts if p["kind"] == "unrelated"})
    return {kind: statistics.fmean(not chosen[id(p)] for p in prompts
                                   if p["source"] == kind and p["kind"] == "unrelated") for kind in kinds}


def _pooled(prompts: list[dict], relevance_of_fold: dict, cap: int, order: str) -> dict[str, float]:
    """``perfect_gate`` over every fold, each with its held-out relevance, pooled."""
    hit = found = notes = related = 0.0
    for fold, relevance in relevance_of_fold.items():
        part = [p for p in prompts if p["fold"] == fold]
        n = sum(p["kind"] == "related" for p in part)
        m = injection_folds.perfect_gate(part, relevance, cap, order)
        hit, related = hit + m["hit"] * n, related + n
        notes += m["notes"] * n
        found += m["precision"] * m["notes"] * n
    return {"hit": hit / max(1, related), "precision": found / max(1.0, notes)}


def row(name: str, m: dict[str, float]) -> str:
    return (f"| {name} | {m['quiet']:.3f} ({m['unrelated']}) | {m['hit']:.3f} ({m['related']}) | {m['notes']:.2f} | "
            f"{m['precision']:.3f} | {m['tokens']:.0f} |")


def report(sets: dict[str, list[dict]], settings: HookSettings, features: tuple[str, ...] = FITTED,
           gate_features: tuple[str, ...] = ()) -> None:
    both = [p for prompts in sets.values() for p in prompts]
    header = ("| | unrelated: nothing injected (n) | related: evidence injected (n) | notes per related "
              "prompt | injected notes that are evidence | tokens per injection |\n|---|---|---|---|---|---|")
    named = [*sets.items(), ("both", both)]
    print(f"\nthe hook's floor: {both[0]['floor']}\n\nShipped settings (lead {settings.standout_lead}, close "
          f"{settings.standout_close}, cap {settings.max_memories}, {settings.standout_order} order, note floor "
          f"{settings.note_floor}, margin {settings.standout_margin}, the hook's floor), "
          f"as the hook answered (with "
          f"--load, as it answered when saved; with --rescore, as it would answer now):\n{header}")
    for name, prompts in named:
        print(row(name, measure(prompts, {id(p): p["shipped_ids"] for p in prompts},
                                {id(p): p["shipped_tokens"] for p in prompts})))
    print(f"\nFloor alone (lead 0, close 1, cap 3: the best three over the hook's floor):\n{header}")
    for name, prompts in named:
        print(row(name, evaluate(prompts, (0.0, 1.0, None, 3))))
    print("\nWhere related prompts' evidence was lost (shipped settings, as above; places are recall's):")
    for name, prompts in named:
        quiet = quiet_by_kind(prompts, {id(p): p["shipped_ids"] for p in prompts})
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in misses(prompts).items()) + "; quiet by kind: " +
              ", ".join(f"{k} {v:.3f}" for k, v in quiet.items()))
    nested_rows(sets, header, features)
    if gate_features:
        gated_rows(sets, header, features, gate_features)
    recall_order_rows(sets, header, features, gate_features)
    if any("scores" in p for p in both):  # saved since branch gate5
        margin_rows(sets, header, features)
        margin_rows(sets, header, features, share_guard=True)
    for label, floors in (("the hook's floor", (None,)), ("the floor chosen too", injection_folds.FLOORS)):
        result, params = held_out(both, floors)
        print(f"\nSelection alone held out, {label}: (lead, close, floor, cap) chosen on four folds of both sets, "
              f"measured on the fifth:\n{header}")
        for name in sets:
            subset = [p for p in both if p["set"] == name]
            chosen = {id(p): replay(p, *params[p["fold"]]) for p in subset}
            print(row(name, measure(subset, {k: v[0] for k, v in chosen.items()}, {k: v[1] for k, v in chosen.items()})))
        print(row("both", result))
        print(f"per fold (lead, close, floor, cap; floor None: recall's): {params}")
        print(f"\nAcross sets, {label}: chosen on one set, measured on the other:\n{header}")
        for source, target in (("locomo", "lme"), ("lme", "locomo")):
            if source not in sets or target not in sets:
                continue
            params_one = fit(sets[source], floors)
            print(row(f"fit on {source} {params_one} → {target}", evaluate(sets[target], params_one)))
        print(f"chosen on all of both sets (in-sample): {fit(both, floors)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev.json")
    parser.add_argument("--lme-data", type=Path, default=DATA / "lme-dev.json")
    parser.add_argument("--lme", default=",".join(map(str, LME_POSITIONS)),
                        help="LongMemEval instances: positions (comma-separated) in the set ordered by "
                             "(answerable, sha256 of the question id); 0-5 are the six _abs ones")
    parser.add_argument("--per-conversation", type=int, default=40)
    parser.add_argument("--locomo-turns", type=int, default=0,
                        help="each LoCoMo conversation's first this many turns only (small stores; 0: all)")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--rescore", action="store_true",
                        help="with --load: read each candidate's relevance anew from its saved inputs with the "
                             "packaged model (localmem/models/relevance.json) and the hook's floor, as a hook would now")
    parser.add_argument("--skip-shapes", default="", help="with --load --rescore: drop the candidates of these shapes "
                        f"(comma-separated, of {', '.join(NOTE_REASONS)}) as the hook drops the notes it never injects")
    parser.add_argument("--sets", default="locomo,lme", help="which sets to ask (comma-separated)")
    parser.add_argument("--save", type=Path, help="also write the asked prompts' candidates here (JSON)")
    parser.add_argument("--load", help="replay saved candidates instead of asking (no store built): "
                                       "files written by --save, comma-separated (a set in several joined)")
    parser.add_argument("--inputs", default=",".join(FITTED),
                        help="the relevance inputs the held-out-together fit reads (comma-separated, of "
                             f"{', '.join(FEATURES)}; default the shipped model's, {', '.join(FITTED)})")
    parser.add_argument("--gate-inputs", default="",
                        help="also fit a prompt gate (injection_folds.fit_gate) over the best candidate's inputs "
                             f"(comma-separated, of {', '.join(injection_folds.GATE_INPUTS)}), held out the same way")
    args = parser.parse_args()
    features = tuple(args.inputs.split(","))
    gate_features = tuple(g for g in args.gate_inputs.split(",") if g)
    if not set(features) <= set(FEATURES) | set(prompt_terms.VARIANTS):
        parser.error(f"--inputs takes some of {', '.join(FEATURES + prompt_terms.VARIANTS)}, got {args.inputs!r}")
    if not set(gate_features) <= set(injection_folds.GATE_INPUTS) | set(prompt_terms.VARIANTS):
        parser.error(f"--gate-inputs takes some of {', '.join(injection_folds.GATE_INPUTS)}, got {args.gate_inputs!r}")
    if (args.rescore or args.skip_shapes) and not (args.load and args.rescore):
        parser.error("--rescore and --skip-shapes replay saved candidates: give --load FILE --rescore")
    if not set(filter(None, args.skip_shapes.split(","))) <= set(NOTE_REASONS):
        parser.error(f"--skip-shapes takes some of {', '.join(NOTE_REASONS)}, got {args.skip_shapes!r}")
    if args.locomo_turns < 0:
        parser.error(f"--locomo-turns takes 0 (all) or more, got {args.locomo_turns}")
    if not set(args.sets.split(",")) <= {"locomo", "lme"}:
        parser.error(f"--sets takes locomo and/or lme, got {args.sets!r}")
    settings = HookSettings()
    started = time.perf_counter()
    if args.load:
        sets = injection_folds.load_saved(args.load)
        if args.skip_shapes:
            print(f"notes dropped as {args.skip_shapes} (of them evidence), per set: "
                  f"{injection_folds.skip_shapes(sets, args.skip_shapes.split(','))}")
        for prompts in sets.values():
            for p in prompts:
                if args.rescore:
                    rescore(p, settings)
                if "terms" in p:  # saved since branch gate5
                    prompt_terms.attach_variants(p)
    else:
        work = Path(tempfile.mkdtemp(prefix="hook-injection-"))
        wanted = args.sets.split(",")
        sets = {}
        try:
            if "locomo" in wanted:
                sets["locomo"] = locomo_prompts(args.locomo, args.embedder, args.per_conversation, work, settings,
                                                args.locomo_turns)
                print(f"locomo asked in {time.perf_counter() - started:.0f} s", flush=True)
            if "lme" in wanted:
                positions = [int(p) for p in args.lme.split(",") if p.strip()]
                sets["lme"] = lme_prompts(args.lme_data, args.embedder, positions, work, settings)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if args.save:
            args.save.write_text(json.dumps(sets, default=sorted), "utf-8")
    times = [p["seconds"] for prompts in sets.values() for p in prompts if "seconds" in p]
    if times:
        ratios = [hook / recall for hook, recall in times]
        print(f"\nUserPromptSubmit answer in-process on the warm LoCoMo store, paired with one plain recall of "
              f"the same prompt (limit 20, the project's tag): p50 {statistics.median(h for h, _ in times) * 1000:.1f}"
              f" ms vs {statistics.median(r for _, r in times) * 1000:.1f} ms; hook/recall p50 "
              f"{statistics.median(ratios):.2f} (n {len(times)}; a loaded shared machine)")
    report(sets, settings, features, gate_features)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
