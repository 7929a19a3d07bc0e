"""Each saved prompt's scope (the store and project it was asked in) and the scope's answer to prompts not about it.

benchmarks/hooks/unserved.py's lever ``scope_floor`` (docs/results/history.md, branch lmefull16) sets a prompt's
bar relative to its scope: the median gate value of the scope's probes, the hand-written off-topic prompts asked of
it (confidence_calibration.OFF_TOPIC), the prompt itself left out. The saved prompts carry no store name, so the
scope is read from how benchmarks/common/hook_prompts.py asks them: a LoCoMo prompt's fold is the conversation whose
project it is asked from; LongMemEval's instances are saved one after another, each opening with its own question
(``question`` or ``abstain``) and followed by the next instance's question and its off-topic prompts.
"""

from __future__ import annotations

import numpy as np

PROBE = "offtopic"  # the source of the prompts that serve as a scope's probes
OPENS_INSTANCE = ("question", "abstain")  # the first prompt saved of each LongMemEval instance


def attach_scopes(sets: dict[str, list[dict]]) -> None:
    """Give each prompt a ``scope`` key (hashable; equal for prompts asked of the same store and project)."""
    for name, prompts in sets.items():
        if name == "locomo":
            for p in prompts:
                p["scope"] = (name, p["fold"])
            continue
        instance = -1
        for p in prompts:
            if p.get("source") in OPENS_INSTANCE:
                instance += 1
            if instance < 0:
                raise ValueError(f"set {name!r}: a prompt of source {p.get('source')!r} comes before any instance's "
                                 "own question; the save is not in hook_prompts.lme_prompts' order")
            p["scope"] = (name, instance)


def scope_references(values: np.ndarray, scopes: list, probes: np.ndarray) -> np.ndarray:
    """Per prompt, the median of ``values`` over its scope's probes other than itself; -inf where there is none
    (a prompt with no scope, or the scope's only probe)."""
    out = np.full(len(values), -np.inf)
    members: dict = {}
    for i, scope in enumerate(scopes):
        if scope is not None:
            members.setdefault(scope, []).append(i)
    for indices in members.values():
        probe_of = [i for i in indices if probes[i]]
        for i in indices:
            others = [values[j] for j in probe_of if j != i]
            if others:
                out[i] = float(np.median(others))
    return out
