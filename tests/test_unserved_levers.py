"""benchmarks/hooks/unserved.py: each unserved related prompt is put under the cause its evidence's place says, and
the two levers pick the notes past the first the way they are named (with the lever off, the shipped rule's notes)."""

from __future__ import annotations

import numpy as np

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
