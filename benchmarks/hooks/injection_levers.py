"""Where the prompt hook's related prompts go unserved held out, and levers past the margin rule, on saved candidates.

Reads what ``benchmarks/hooks/hook_injection.py --save S.json`` wrote (no store is built). For each lever of
benchmarks/common/injection_levers.py (``none``: the shipped margin rule; ``third``: a third note only when recall
scores it close to its first; ``lean``: the inject-or-not decision reads recall's gap between its first two as well
as relevance; ``swap``: a second note of the first's thread gives way to a close candidate of another thread), per
fold (LoCoMo's conversation, LongMemEval's instance index mod 5) the relevance model is fitted and the rule with the
lever's parameter chosen on the other four folds of both sets (the share of notes that are evidence guarded in each
set), then measured on the fold; and across sets, fitted on one set and measured on the other. No seeds: the folds
and the fits are deterministic. Printed: quiet / related served / notes per related prompt / share of notes that
are evidence / tokens per injection, the related prompts left unserved by where their evidence was lost, and
whether the lever meets issue 40's ship rule against ``none``.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/injection_levers.py --load S.json \
        [--levers none,third,lean,swap]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import injection_folds, injection_levers  # noqa: E402
from benchmarks.hooks.hook_injection import FOLDS, HEADING, measure  # noqa: E402
from benchmarks.quality.relevance_calibration import FITTED  # noqa: E402
from localmem.hooks.inject import build_block, estimate_tokens  # noqa: E402

BUDGET = 1500
QUIET, SHARE, NOTES, QUIET_ACROSS = 0.95, 0.5, 3.0, 0.92


def blocks(prompts: list[dict], relevance, rule: tuple) -> tuple[dict[int, list[str]], dict[int, int]]:
    """Each prompt's notes through the hook's block (its token budget) and the block's tokens."""
    ids, tokens = {}, {}
    by_id = {id(p): p for p in prompts}
    for key, picked in injection_levers.picked_ids(prompts, relevance, rule).items():
        block, ids[key] = build_block([by_id[key]["memories"][m] for m in picked], HEADING, BUDGET, rule[2])
        tokens[key] = estimate_tokens(block) if block else 0
    return ids, tokens


def lever_rows(sets: dict[str, list[dict]], lever: str, features: tuple[str, ...], fits: dict) -> dict:
    """The lever held out together and across sets; returns the figures per set and direction. ``fits``: the
    relevance fitted without each fold (by fold) and on each set (by name)."""
    both = [p for prompts in sets.values() for p in prompts]
    ids, tokens, lost, rules = {}, {}, {}, []
    for fold in range(FOLDS):
        relevance, rule = injection_levers.fitted([p for p in both if p["fold"] != fold], lever, features, fits[fold])
        rules.append(rule)
        part = [p for p in both if p["fold"] == fold]
        got = blocks(part, relevance, rule)
        ids.update(got[0])
        tokens.update(got[1])
        lost.update({id(p): injection_levers.lost_where(p, ids[id(p)], relevance, rule)
                     for p in part if p["kind"] == "related"})
    print(f"\nLever {lever!r}, held out together (relevance {', '.join(features)}; the share guarded in each set):")
    print("| | quiet (n) | related served (n) | notes per related prompt | share of notes evidence | tokens |")
    print("|---|---|---|---|---|---|")
    out = {}
    for name, prompts in [*sets.items(), ("both", both)]:
        out[name] = measure(prompts, ids, tokens)
        print(row(name, out[name]))
    print("per fold (floor, note floor, cap, margin, third, lean, swap): " + "; ".join(map(str, rules)))
    for name, prompts in [*sets.items(), ("both", both)]:
        counts = Counter(lost[id(p)] for p in prompts if p["kind"] == "related")
        print(f"  lost, {name}: " + ", ".join(f"{kind} {counts.get(kind, 0)}" for kind in injection_levers.LOST))
    for source, target in (("locomo", "lme"), ("lme", "locomo")):
        if source in sets and target in sets:
            relevance, rule = injection_levers.fitted(sets[source], lever, features, fits[source])
            out[f"{source}→{target}"] = measure(sets[target], *blocks(sets[target], relevance, rule))
            print(row(f"fit on {source} {rule} → {target}", out[f"{source}→{target}"]))
    return out


def row(name: str, m: dict[str, float]) -> str:
    return (f"| {name} | {m['quiet']:.3f} ({m['unrelated']}) | {m['hit']:.3f} ({m['related']}) | {m['notes']:.2f} | "
            f"{m['precision']:.3f} | {m['tokens']:.0f} |")


def ship_rule(base: dict, lever: dict, names: list[str]) -> list[str]:
    """Issue 40's ship rule for a lever against the shipped rule: what it fails (empty: met)."""
    failed = [f"{n} served {lever[n]['hit']:.3f} not above {base[n]['hit']:.3f}" for n in names
              if lever[n]["hit"] <= base[n]["hit"]]
    failed += [f"{n} quiet {lever[n]['quiet']:.3f}" for n in names if lever[n]["quiet"] < QUIET]
    failed += [f"{n} share {lever[n]['precision']:.3f}" for n in names if lever[n]["precision"] < SHARE]
    failed += [f"{n} notes {lever[n]['notes']:.2f}" for n in names if lever[n]["notes"] > NOTES]
    failed += [f"{d} quiet {lever[d]['quiet']:.3f}" for d in lever if "→" in d and lever[d]["quiet"] < QUIET_ACROSS]
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="files written by hook_injection.py --save, comma-separated")
    parser.add_argument("--levers", default=",".join(injection_levers.LEVERS),
                        help=f"which levers (comma-separated, of {', '.join(injection_levers.LEVERS)})")
    parser.add_argument("--inputs", default=",".join(FITTED), help="the relevance inputs the fits read")
    args = parser.parse_args()
    levers = [name for name in args.levers.split(",") if name]
    if not levers or not set(levers) <= set(injection_levers.LEVERS):
        parser.error(f"--levers takes some of {', '.join(injection_levers.LEVERS)}, got {args.levers!r}")
    started = time.perf_counter()
    sets = injection_folds.load_saved(args.load)
    features = tuple(args.inputs.split(","))
    both = [p for prompts in sets.values() for p in prompts]
    fits = {fold: injection_folds.fit_relevance([p for p in both if p["fold"] != fold], features)
            for fold in range(FOLDS)}
    fits.update({name: injection_folds.fit_relevance(prompts, features) for name, prompts in sets.items()})
    results = {lever: lever_rows(sets, lever, features, fits) for lever in dict.fromkeys(["none", *levers])}
    for lever, figures in results.items():
        if lever != "none":
            failed = ship_rule(results["none"], figures, list(sets))
            print(f"\nship rule, {lever!r}: " + ("met" if not failed else "missed: " + "; ".join(failed)))
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
