"""benchmarks/hooks/unserved.py: each unserved related prompt is put under the cause its evidence's place says, the
levers pick the notes or open the gate the way they are named (with the lever off, the shipped rule's), and the gates
scored together score as each alone."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.common import injection_folds as folds
from benchmarks.common.scope_probes import attach_scopes, scope_references
from benchmarks.hooks import unserved


def _prompt(relevances: list[float], scores: list[float] | None = None, evidence=(), learned: float = 0.9) -> dict:
    """Candidates in recall's order with these relevances (``r``) and recall scores."""
    ids = [f"m{i}" for i in range(len(relevances))]
    scores = scores or [1.0] * len(relevances)
    return {"kind": "related", "set": "s", "fold": 0, "evidence": {ids[i] for i in evidence},
            "candidates": [(m, None, {"r": r, "learned": learned}, i + 1)
                           for i, (m, r) in enumerate(zip(ids, relevances))],
            "scores": dict(zip(ids, scores)), "memories": {m: {"content": m, "metadata": {}} for m in ids}}


def _relevance(inputs: dict) -> float:
    return inputs["r"]


def _notes(prompt: dict, lever: str, value, cap: int = 2, margin: float = 0.7) -> list[int]:
    grid = unserved.NoteGrid([prompt], _relevance)
    return [int(j) for j in np.flatnonzero(grid.lever_notes(0.0, cap, margin, lever, value)[0])]


def test_the_second_note_is_the_most_relevant_of_recalls_places_two_to_k():
    prompt = _prompt([0.95, 0.3, 0.2, 0.9, 0.1])
    assert _notes(prompt, "second_by_relevance", None) == [0, 1]  # off: recall's first two
    assert _notes(prompt, "second_by_relevance", 3) == [0, 1]  # of places 2-3, the 2nd is the more relevant
    assert _notes(prompt, "second_by_relevance", 5) == [0, 3]
    assert _notes(prompt, "second_by_relevance", 5, cap=3) == [0, 1, 3]
    one = _prompt([0.95, 0.3, 0.2, 0.9, 0.1], scores=[1.0, 0.5, 0.4, 0.3, 0.2])  # the margin holds the second back
    assert _notes(one, "second_by_relevance", 5) == [0]


def test_a_third_note_goes_to_the_most_relevant_past_the_second_only_over_its_threshold():
    prompt = _prompt([0.95, 0.5, 0.3, 0.92, 0.1, 0.97])
    assert _notes(prompt, "third_by_relevance", None) == [0, 1]
    assert _notes(prompt, "third_by_relevance", (5, 0.9)) == [0, 1, 3]
    assert _notes(prompt, "third_by_relevance", (10, 0.9)) == [0, 1, 5]
    assert _notes(prompt, "third_by_relevance", (5, 0.95)) == [0, 1]
    one = _prompt([0.95, 0.5, 0.3, 0.92], scores=[1.0, 0.5, 0.4, 0.3])
    assert _notes(one, "third_by_relevance", (5, 0.9)) == [0]  # one note: no third


def test_each_unserved_prompt_gets_the_cause_its_evidence_place_says():
    prompts = [_prompt([0.95, 0.9, 0.8, 0.7, 0.6], evidence=(4,)),  # 5th: below the third
               _prompt([0.95, 0.9, 0.8], scores=[1.0, 0.5, 0.4], evidence=(1,)),  # 2nd, held by the margin
               _prompt([0.95, 0.9, 0.8], evidence=(2,)),  # 3rd, past the cap of two
               _prompt([0.3, 0.2, 0.1], evidence=(0,), learned=0.1),  # 1st, the gate silent
               _prompt([0.95, 0.9])]  # no evidence recalled
    grid = unserved.NoteGrid(prompts, _relevance)
    rule = (0.84, 0.0, 2, 0.7, "blend", 0.5, 0.0)
    passes = grid.passes(rule[0], *rule[4:])
    assert [unserved.cause_of(grid, i, rule, passes) for i in range(len(prompts))] == [
        "below the third", "2nd, the margin", "3rd, the cap", "gate silent", "not recalled"]


def test_a_third_note_goes_in_only_when_recalls_third_scores_within_m3_of_its_first():
    prompt = _prompt([0.95, 0.5, 0.3, 0.9], scores=[1.0, 0.9, 0.82, 0.5])
    assert _notes(prompt, "third_by_margin", None) == [0, 1]  # off: the shipped cap of two
    assert _notes(prompt, "third_by_margin", 0.8) == [0, 1, 2]  # 0.82 of the first: a third
    assert _notes(prompt, "third_by_margin", 0.85) == [0, 1]
    assert _notes(prompt, "third_by_margin", 0.85, cap=3) == [0, 1, 2]  # the rule's cap 3 already holds three
    held = _prompt([0.95, 0.5, 0.3], scores=[1.0, 0.6, 0.6])  # the second under the margin: one note, no third
    assert _notes(held, "third_by_margin", 0.5) == [0]
    unknown = _prompt([0.95, 0.5, 0.3], scores=[1.0, 0.9, 0.9])
    del unknown["scores"]["m2"]  # no recall score of the third: the rule's cap
    assert _notes(unknown, "third_by_margin", 0.5) == [0, 1]


def test_the_prompt_signals_are_what_the_hook_has_of_the_prompt():
    prompt = _prompt([0.6, 0.9, 0.2, 0.4], scores=[1.0, 0.8, 0.5, 0.4], learned=0.7)
    prompt["candidates"][0][2].update({"cosine_over_kth": 0.12, "unseen_terms": 0.25})
    signals = unserved.NoteGrid([prompt], _relevance).signals[0]
    # best relevance, recall's first's learned, second over first, the first's two prompt inputs, best less the
    # median of the rest (0.6, 0.4, 0.2)
    assert np.allclose(signals, [0.9, 0.7, 0.8, 0.12, 0.25, 0.5])


def test_the_prompt_gate_is_fitted_on_served_related_against_unrelated_and_decides_in_place_of_the_floor():
    def asked(kind: str, best: float, evidence=(), source: str = "question", set_name: str = "s") -> dict:
        p = _prompt([best, 0.1, 0.1, 0.1], evidence=evidence, learned=best)
        return {**p, "kind": kind, "source": source, "set": set_name}
    prompts = [asked("related", 0.8 + 0.01 * i, evidence=(0,), set_name=s) for i in range(5) for s in "ab"]
    prompts += [asked("unrelated", 0.2 + 0.01 * i, source="other", set_name=s) for i in range(5) for s in "ab"]
    # left out of the fit: related prompts with no evidence in recall's first three, and off-topic ones
    left_out = [asked("related", 0.1, evidence=(3,), set_name="a"), asked("unrelated", 0.95, source="offtopic",
                                                                          set_name="b")] * 20
    beta = unserved.fit_prompt_gate(unserved.NoteGrid(prompts, _relevance), prompts)
    prompts += left_out
    grid = unserved.NoteGrid(prompts, _relevance)
    assert np.allclose(unserved.fit_prompt_gate(grid, prompts), beta)
    grid.use_gate(beta)
    assert grid.gate_probability[:10].min() > 0.5 > grid.gate_probability[10:20].max()
    # on, the gate's probability decides whatever the floor; off (None), the blend against the floor does
    on = grid.chosen_lever((None, 0.0, 2, 0.7, None, "prompt_gate", 0.5)).any(axis=1)
    assert on[:10].all() and not on[10:20].any()
    off = grid.chosen_lever((0.99, 0.0, 2, 0.7, 0.0, "prompt_gate", None)).any(axis=1)
    assert not off[:20].any()


def test_a_scopes_reference_is_the_median_of_its_other_probes():
    values = np.array([0.1, 0.2, 0.3, 0.9, 0.5, 0.7, 0.4])
    scopes = ["a", "a", "a", "a", "b", "b", None]
    probes = np.array([True, True, True, False, True, False, True])
    out = scope_references(values, scopes, probes)
    # a's probes 0.1, 0.2, 0.3: each probe's median leaves itself out; b's one probe sets no bar for itself
    assert np.allclose(out[:4], [0.25, 0.2, 0.15, 0.2]) and out[5] == 0.5
    assert out[4] == -np.inf and out[6] == -np.inf


def test_scopes_are_read_from_the_order_the_prompts_were_asked_in():
    lme = [{"source": s, "fold": f} for s, f in [("question", 0), ("other", 0), ("offtopic", 0), ("abstain", 1),
                                                  ("other", 1), ("offtopic", 1), ("question", 0), ("offtopic", 0)]]
    locomo = [{"source": "other", "fold": 3}, {"source": "offtopic", "fold": 1}]
    attach_scopes({"lme": lme, "locomo": locomo})
    assert [p["scope"][1] for p in lme] == [0, 0, 0, 1, 1, 1, 2, 2]  # fold 0 twice: two instances, two scopes
    assert [p["scope"] for p in locomo] == [("locomo", 3), ("locomo", 1)]
    with pytest.raises(ValueError, match="before any instance"):
        attach_scopes({"lme": [{"source": "offtopic", "fold": 0}]})


def _scoped(kind: str, best: float, scope: str, source: str) -> dict:
    p = _prompt([best, 0.1], evidence=(0,) if kind == "related" else (), learned=best)  # blend value = best
    return {**p, "kind": kind, "source": source, "scope": scope,
            "evidence": p["evidence"] if kind == "related" else set()}


def test_the_scope_floor_raises_the_bar_where_the_scopes_probes_score_high_and_is_chosen_when_it_serves_more():
    # scope "low": probes at 0.2, a related prompt at 0.55; scope "high": probes at 0.6-0.7, a related prompt at 0.95
    prompts = [_scoped("related", 0.55, "low", "question"), _scoped("related", 0.95, "high", "question")]
    prompts += [_scoped("unrelated", 0.2, "low", "offtopic") for _ in range(20)]
    prompts += [_scoped("unrelated", 0.6 + 0.005 * i, "high", "offtopic") for i in range(20)]
    grid = unserved.NoteGrid(prompts, _relevance)
    off = grid.lever_passes(0.5, 0.5, "scope_floor", None)
    assert off[:2].all() and off[22:].all()  # the floor alone lets the high scope's probes through
    on = grid.lever_passes(0.5, 0.5, "scope_floor", 0.1)
    assert on[:2].all() and not on[2:].any()  # over the scope's median + 0.1: only the related prompts
    assert not grid.lever_passes(0.96, 0.5, "scope_floor", 0.1)[1]  # and never under the floor
    # the floor alone cannot serve both quietly (0.55 lets the high scope's probes in); the lever can
    rule = unserved.NoteGrid(prompts, _relevance).choose_lever("none")
    assert rule[0] > 0.55 and unserved.NoteGrid(prompts, _relevance).chosen_lever(rule)[:2].any(axis=1).tolist() == [
        False, True]
    rule = unserved.NoteGrid(prompts, _relevance).choose_lever("scope_floor")
    assert rule[-1] is not None and rule[0] <= 0.55
    assert unserved.NoteGrid(prompts, _relevance).chosen_lever(rule).any(axis=1).tolist() == [True, True] + [False] * 40


def test_the_gates_scored_together_read_what_each_gate_scored_alone_reads():
    rng = np.random.default_rng(7)
    prompts = []
    for n in range(60):
        kind = "related" if n % 3 == 0 else "unrelated"
        p = _prompt(list(rng.uniform(0, 1, 6)), scores=sorted(rng.uniform(0.1, 1, 6), reverse=True),
                    evidence=tuple(rng.choice(6, 2, replace=False)) if kind == "related" else (),
                    learned=float(rng.uniform()))
        prompts.append({**p, "kind": kind, "set": "ab"[n % 2],
                        "evidence": p["evidence"] if kind == "related" else set()})
    grid = unserved.NoteGrid(prompts, _relevance)
    gates = np.array([grid.passes(floor, "blend", 0.3, 0.0) for floor in folds.FLOORS] + [np.zeros(60, bool)])
    for cap, margin in ((2, 0.7), (3, 0.0)):
        chosen = grid.notes(0.0, cap, margin)
        kept_all, found_all = chosen.sum(axis=1), (chosen & grid.evidence).sum(axis=1)
        alone = [folds.objective(grid.figures(kept_all * gate, found_all * gate)) for gate in gates]
        assert grid.objective_keys(kept_all, found_all, gates) == alone


def _supported(kind: str, best: float, support: int, set_name: str) -> dict:
    """A prompt whose blend value is ``best`` (learned = best) with ``support`` candidates of relevance >= 0.5."""
    relevances = [best] + [0.6] * (support - 1) + [0.1] * (6 - support)
    p = _prompt(relevances, evidence=(0,) if kind == "related" else (), learned=best)
    return {**p, "kind": kind, "set": set_name, "source": "question" if kind == "related" else "other",
            "evidence": p["evidence"] if kind == "related" else set()}


def test_support_counts_recalls_candidates_at_least_more_likely_related_than_not():
    grid = unserved.NoteGrid([_prompt([0.9, 0.5, 0.49, 0.7]), _prompt([0.3, 0.2]), _prompt([])], _relevance)
    assert grid.support.tolist() == [3, 0, 0]  # 0.5 counts, 0.49 does not; an empty answer has none


def test_the_support_gate_shuts_thinly_supported_prompts_and_is_chosen_when_it_lets_the_floor_fall():
    # related prompts at a blend value of 0.6 with support 4; unrelated ones scoring higher (0.7-0.8) with support 1:
    # no floor serves the related ones quietly, a floor of 0.6 with support >= 2 does
    prompts = [_supported("related", 0.6, 4, s) for _ in range(5) for s in "ab"]
    prompts += [_supported("unrelated", 0.7 + 0.005 * i, 1, s) for i in range(20) for s in "ab"]
    grid = unserved.NoteGrid(prompts, _relevance)
    assert grid.lever_passes(0.6, 0.5, "support_gate", None).all()  # off: the floor alone
    on = grid.lever_passes(0.6, 0.5, "support_gate", 2)
    assert on[:10].all() and not on[10:].any()
    assert not grid.lever_passes(0.61, 0.5, "support_gate", 2)[:10].any()  # and never under the floor
    rule = unserved.NoteGrid(prompts, _relevance).choose_lever("none")
    assert not unserved.NoteGrid(prompts, _relevance).chosen_lever(rule)[:10].any()
    rule = unserved.NoteGrid(prompts, _relevance).choose_lever("support_gate")
    assert rule[-2:] == ("support_gate", 2) and rule[0] <= 0.6
    chosen = unserved.NoteGrid(prompts, _relevance).chosen_lever(rule).any(axis=1)
    assert chosen.tolist() == [True] * 10 + [False] * 40
