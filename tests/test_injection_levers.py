"""benchmarks/common/injection_levers.py: with every lever off it keeps exactly the shipped margin rule's notes
(so its held-out "none" row is the shipped rule), and each lever changes the notes the way it says."""

from __future__ import annotations

import random

import numpy as np
import pytest

from benchmarks.common import injection_folds, injection_levers


def _prompt(candidates: list[tuple[float, float, str | None]], kind: str = "related", evidence=()) -> dict:
    """Candidates in recall's order as (relevance, recall's score, thread)."""
    ids = [f"m{i}" for i in range(len(candidates))]
    return {"kind": kind, "set": "s", "fold": 0, "evidence": set(evidence),
            "candidates": [(m, None, {"r": r}, i + 1) for i, (m, (r, _, _)) in enumerate(zip(ids, candidates))],
            "scores": {m: s for m, (_, s, _) in zip(ids, candidates)},
            "memories": {m: {"metadata": {} if t is None else {"session": t}} for m, (_, _, t) in zip(ids, candidates)}}


def _relevance(inputs: dict) -> float:
    return inputs["r"]


@pytest.mark.parametrize("seed", range(4))
def test_with_every_lever_off_the_notes_are_the_margin_rules(seed):
    rng = random.Random(seed)
    prompts = [_prompt([(rng.choice([0.0, 0.3, 0.8, 0.9, 0.95]), rng.choice([0.2, 0.5, 0.7, 0.9, 1.0]),
                         rng.choice(["a", "b", None])) for _ in range(rng.randint(0, 8))],
                       rng.choice(["related", "unrelated"])) for _ in range(50)]
    grid = injection_levers.LeverGrid(prompts, _relevance)
    for rule in [(0.9, 0.0, 2, 0.7), (0.8, 0.3, 3, 0.0), (0.95, 0.0, 3, 0.9)]:
        assert np.array_equal(grid.chosen_lever(*rule), grid.chosen_margin(*rule)), rule


def _kept(prompt: dict, rule: tuple) -> list[int]:
    return [j for j, kept in enumerate(injection_levers.LeverGrid([prompt], _relevance).chosen_lever(*rule)[0]) if kept]


def test_a_third_note_only_when_recall_scores_it_close_to_the_first():
    prompt = _prompt([(0.95, 1.0, None), (0.5, 0.9, None), (0.4, 0.6, None), (0.3, 0.5, None)])
    assert _kept(prompt, (0.9, 0.0, 3, 0.7)) == [0, 1, 2]  # the shipped rule: the close second lets a third in
    assert _kept(prompt, (0.9, 0.0, 3, 0.7, 0.8)) == [0, 1]
    assert _kept(prompt, (0.9, 0.0, 3, 0.7, 0.5)) == [0, 1, 2]


def test_the_lean_lets_a_first_that_stands_far_above_recalls_second_in_and_not_a_level_one():
    alone = _prompt([(0.86, 1.0, None), (0.2, 0.4, None)])
    level = _prompt([(0.86, 1.0, None), (0.2, 0.95, None)])
    assert _kept(alone, (0.9, 0.0, 2, 0.7)) == [] and _kept(level, (0.9, 0.0, 2, 0.7)) == []
    assert _kept(alone, (0.9, 0.0, 2, 0.7, 0.0, 0.1)) == [0]  # 0.86 + 0.1 × 0.6 clears 0.90
    assert _kept(level, (0.9, 0.0, 2, 0.7, 0.0, 0.1)) == []  # 0.86 + 0.1 × 0.05 does not
    high_alone = _prompt([(0.92, 1.0, None), (0.2, 0.4, None)])
    assert _kept(high_alone, (0.9, 0.0, 2, 0.7, 0.0, -0.1)) == []  # a negative lean: 0.92 − 0.1 × 0.6 does not
    assert _kept(high_alone, (0.9, 0.0, 2, 0.7, 0.0, -0.02)) == [0]


def test_a_second_note_of_the_firsts_thread_gives_way_to_a_close_one_of_another_thread():
    prompt = _prompt([(0.95, 1.0, "a"), (0.5, 0.9, "a"), (0.4, 0.85, "a"), (0.3, 0.8, "b")])
    assert _kept(prompt, (0.9, 0.0, 2, 0.7)) == [0, 1]
    assert _kept(prompt, (0.9, 0.0, 2, 0.7, 0.0, 0.0, 0.75)) == [0, 3]
    assert _kept(prompt, (0.9, 0.0, 2, 0.7, 0.0, 0.0, 0.85)) == [0, 1]  # the other thread's is not close enough
    no_thread = _prompt([(0.95, 1.0, None), (0.5, 0.9, None), (0.3, 0.8, "b")])
    assert _kept(no_thread, (0.9, 0.0, 2, 0.7, 0.0, 0.0, 0.5)) == [0, 1]  # no thread: nothing repeats


def test_where_an_unserved_prompt_lost_its_evidence():
    rule = (0.9, 0.0, 2, 0.7, 0.0, 0.0, 1.01)
    silent = _prompt([(0.5, 1.0, None), (0.4, 0.9, None)], evidence={"m1"})
    dropped = _prompt([(0.95, 1.0, None), (0.4, 0.5, None)], evidence={"m1"})
    lower = _prompt([(0.95, 1.0, None), (0.4, 0.9, None), (0.4, 0.9, None)], evidence={"m2"})
    for prompt, where in ((silent, 1), (dropped, 3), (lower, 5)):
        picked = injection_levers.picked_ids([prompt], _relevance, rule)[id(prompt)]
        assert injection_levers.lost_where(prompt, picked, _relevance, rule) == injection_levers.LOST[where]
    assert injection_folds.in_recall_order(lower)[2][0] == "m2"


def test_with_no_lever_the_rule_chosen_is_the_margin_rules():
    rng = random.Random(7)
    prompts = [_prompt([(rng.choice([0.0, 0.3, 0.8, 0.9, 0.95]), rng.choice([0.2, 0.5, 0.7, 0.9, 1.0]), None)
                        for _ in range(rng.randint(1, 6))], rng.choice(["related", "unrelated"]),
                       evidence={f"m{rng.randint(0, 3)}"}) for _ in range(80)]
    for p in prompts:
        p["set"] = rng.choice(["a", "b"])
    grid = injection_levers.LeverGrid(prompts, _relevance)
    assert grid.choose_lever("none")[:4] == grid.choose_margin(share_guard=True)
