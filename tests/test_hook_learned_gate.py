"""The prompt hook's inject-or-not decision reads the learned ranking's own score of recall's first (issue 40, gate12).

When recall's learned ranking scored the answer, a prompt gets notes when (1 - blend) x its best relevance + blend x
the ranking's score of recall's first clears the floor less blend_drop (selection.gate_of); without that score the
best relevance alone is read against the floor, as before.
"""

from __future__ import annotations

import random

import pytest

from localmem.errors import ConfigError
from localmem.hooks.events import _thresholds_line
from localmem.hooks.selection import (BELOW_FLOOR, DEFAULT_BLEND, DEFAULT_BLEND_DROP, DEFAULT_FLOOR, KEPT, Candidate,
                                      StandOut, choose, choose_injectable)


def pool(learned_first: float | None, best: float = 0.8) -> list[Candidate]:
    """Recall's first (the most relevant too) and two weaker candidates; only the first carries ``learned_first``."""
    return [Candidate("a", best, {}, rank=1, score=1.4, learned=learned_first),
            Candidate("b", 0.3, {}, rank=2, score=0.6, learned=0.4),
            Candidate("c", 0.1, {}, rank=3, score=0.5, learned=0.2)]


def kept(candidates: list[Candidate]) -> list[str]:
    return [c.memory_id for c in candidates if c.reason == KEPT]


def test_a_first_the_ranking_scores_high_is_injected_under_the_relevance_floor():
    rule = StandOut(DEFAULT_FLOOR)
    high = pool(0.95)  # 0.5 x 0.8 + 0.5 x 0.95 = 0.875 >= 0.90 - 0.06
    thresholds = choose(high, rule)
    assert kept(high) == ["a"]
    assert thresholds["gate"] == pytest.approx(0.875) and thresholds["gate_floor"] == pytest.approx(0.84)
    low = pool(0.6)  # 0.70: under
    choose(low, rule)
    assert kept(low) == [] and {c.reason for c in low} == {BELOW_FLOOR}


def test_without_a_learned_score_the_best_relevance_alone_meets_the_floor_as_before():
    for best, wanted in ((0.8, []), (0.91, ["a"])):
        candidates = pool(None, best)
        thresholds = choose(candidates, StandOut(DEFAULT_FLOOR))
        assert kept(candidates) == wanted and "gate" not in thresholds
    off = pool(0.99)  # a blend of 0 reads the relevance alone whatever the ranking says
    choose(off, StandOut(DEFAULT_FLOOR, blend=0.0))
    assert kept(off) == []


def test_the_ranking_can_also_hold_back_a_relevant_first():
    candidates = pool(0.3, best=0.95)  # 0.475 + 0.15 = 0.625 < 0.84
    choose(candidates, StandOut(DEFAULT_FLOOR))
    assert kept(candidates) == []


def test_the_gate_reads_recalls_first_not_the_most_relevant():
    candidates = [Candidate("a", 0.85, {}, rank=2, learned=0.2), Candidate("b", 0.5, {}, rank=1, learned=0.97)]
    thresholds = choose(candidates, StandOut(DEFAULT_FLOOR))  # 0.425 + 0.485 = 0.91
    assert thresholds["first_learned"] == pytest.approx(0.97) and set(kept(candidates)) == {"a", "b"}


@pytest.mark.parametrize("name", ["blend", "blend_drop"])
@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_a_bad_blend_setting_is_refused_by_name(name, value):
    with pytest.raises(ConfigError, match=f"'{name}'"):
        StandOut(DEFAULT_FLOOR, **{name: value})


def test_the_defaults_are_the_held_out_choice():
    assert (DEFAULT_BLEND, DEFAULT_BLEND_DROP, DEFAULT_FLOOR) == (0.5, 0.06, 0.90)


def test_the_verbose_line_says_what_the_gate_read():
    rule = StandOut(DEFAULT_FLOOR)
    candidates = pool(0.95)
    line = _thresholds_line(choose(candidates, rule), rule)
    assert "learned ranking's score of recall's first, 0.950, = 0.875 against 0.84: clears" in line
    bare = pool(None)
    assert "learned" not in _thresholds_line(choose(bare, rule), rule)


def test_leaving_out_refused_notes_by_need_keeps_what_a_full_reading_keeps_with_the_learned_gate():
    """choose_injectable asks recall's first when the gate reads its learned score and nothing is kept: a refused
    first hands the gate to the next one, whose score may clear it."""
    rng = random.Random(12)
    for _ in range(4000):
        n = rng.randint(0, 8)
        ranks = rng.sample(range(1, n + 1), n)
        spec = [(f"m{i}", rng.choice([rng.random(), 0.75 + 0.2 * rng.random()]), ranks[i], 0.1 + rng.random(),
                 None if rng.random() < 0.15 else rng.random()) for i in range(n)]
        refused = {m for m, *_ in spec if rng.random() < 0.35}
        rule = StandOut(rng.choice([0.5, 0.9]), 0.0, rng.choice([1.0, 0.1]), rng.choice([1, 2, 3]),
                        rng.choice(["recall", "relevance"]), rng.choice([0.0, None]), rng.choice([0.0, 0.7]),
                        rng.choice([0.0, 0.5, 0.8]))
        every = [Candidate(m, r, {}, rank=k, score=sc, learned=le) for m, r, k, sc, le in spec if m not in refused]
        choose(every, rule)
        where = [Candidate(m, r, {}, rank=k, score=sc, learned=le) for m, r, k, sc, le in spec]
        choose_injectable(where, rule, lambda c: "refused" if c.memory_id in refused else None)
        assert set(kept(where)) == set(kept(every)), (spec, refused, rule)
