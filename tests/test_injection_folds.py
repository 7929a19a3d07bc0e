"""The held-out-together injection benchmark's parts: its fast stand-out rule agrees with the hook's own
``selection.choose``, and its relevance fit learns from labelled candidates."""

from __future__ import annotations

import json
import random

import pytest

from benchmarks.common import injection_folds
from localmem.hooks.selection import KEPT, Candidate, StandOut, choose


def _prompt(rng: random.Random, kind: str, n: int) -> dict:
    ids = [f"m{i}" for i in range(n)]
    # Few distinct values, so ties and candidates exactly at the floor or at best - close occur.
    candidates = [(m, None, {"score": rng.choice([0.0, 0.3, 0.5, 0.6, 0.62, 0.7, 0.8, 0.81, 0.9, 1.0])}) for m in ids]
    evidence = {m for m in ids if rng.random() < 0.3} if kind == "related" else set()
    return {"kind": kind, "candidates": candidates, "evidence": evidence, "set": "s", "fold": 0}


@pytest.mark.parametrize("seed", range(5))
def test_the_grid_keeps_what_choose_keeps(seed):
    rng = random.Random(seed)
    prompts = [_prompt(rng, rng.choice(["related", "unrelated"]), rng.randint(0, 20)) for _ in range(60)]
    relevance = lambda inputs: inputs["score"]  # noqa: E731
    grid = injection_folds.StandOutGrid(prompts, relevance)
    for params in [(0.0, 0.02, 0.81, 2), (0.1, 0.0, 0.6, 1), (0.0, 1.0, 0.5, 3), (0.2, 0.05, 0.7, 3)]:
        kept = grid.kept(*params)
        hits = notes = found = 0
        for i, p in enumerate(prompts):
            candidates = [Candidate(m, relevance(inputs), {"id": m}) for m, _, inputs in p["candidates"]]
            choose(candidates, StandOut(params[2], params[0], params[1], params[3], note_floor=None))
            chosen = [c.memory_id for c in candidates if c.reason == KEPT]
            assert kept[i] == len(chosen), (seed, params, i)
            if p["kind"] == "related":
                notes += len(chosen)
                found += len(set(chosen) & p["evidence"])
                hits += bool(set(chosen) & p["evidence"])
        measured = grid.measure(*params)
        related = sum(p["kind"] == "related" for p in prompts)
        assert measured["hit"] == pytest.approx(hits / related)
        assert measured["precision"] == pytest.approx(found / notes if notes else 0.0)


def test_the_fit_ranks_evidence_above_unrelated_candidates():
    rng = random.Random(7)
    prompts = []
    for n in range(40):
        related = n % 2 == 0
        candidates = [(f"e{n}", None, {"cosine": rng.uniform(0.5, 0.9)})] if related else []
        candidates += [(f"o{n}-{i}", None, {"cosine": rng.uniform(0.0, 0.45)}) for i in range(5)]
        prompts.append({"kind": "related" if related else "unrelated", "candidates": candidates,
                        "evidence": {f"e{n}"} if related else set(), "set": "a" if n % 4 < 2 else "b", "fold": n % 5})
    relevance = injection_folds.fit_relevance(prompts, ("cosine",))
    assert relevance({"cosine": 0.8}) > 0.9 > 0.1 > relevance({"cosine": 0.1})
    # An off-topic prompt never enters the fit: a perfect-looking negative there changes nothing.
    extra = {"kind": "unrelated", "source": "offtopic", "candidates": [("x", None, {"cosine": 0.85})],
             "evidence": set(), "set": "a", "fold": 0}
    assert injection_folds.fit_relevance(prompts + [extra], ("cosine",))({"cosine": 0.8}) == relevance({"cosine": 0.8})


@pytest.mark.parametrize("seed", range(5))
def test_the_recall_order_grid_keeps_what_choose_keeps_in_recall_order(seed):
    """With the note floor at the floor, RecallOrderGrid is choose(order="recall", close 1, lead 0)."""
    rng = random.Random(100 + seed)
    prompts = []
    for _ in range(60):
        p = _prompt(rng, rng.choice(["related", "unrelated"]), rng.randint(0, 20))
        places = list(range(1, len(p["candidates"]) + 1))
        rng.shuffle(places)
        p["candidates"] = [(m, None, inputs, place) for (m, _, inputs), place in zip(p["candidates"], places)]
        prompts.append(p)
    relevance = lambda inputs: inputs["score"]  # noqa: E731
    grid = injection_folds.RecallOrderGrid(prompts, relevance)
    for floor, cap in [(0.81, 2), (0.6, 1), (0.5, 3), (0.9, 2)]:
        chosen = grid.chosen(floor, floor, cap)
        for i, p in enumerate(prompts):
            candidates = [Candidate(m, relevance(inputs), {"id": m}, rank=place)
                          for m, _, inputs, place in p["candidates"]]
            choose(candidates, StandOut(floor, 0.0, 1.0, cap, "recall", note_floor=None))
            kept = {c.memory_id for c in candidates if c.reason == KEPT}
            ordered = injection_folds.in_recall_order(p)
            assert kept == {c[0] for j, c in enumerate(ordered) if chosen[i, j]}, (seed, floor, cap, i)


def test_choose_fills_the_cap_in_recall_order_and_says_why_the_rest_are_out():
    candidates = [Candidate("a", 0.99, {}, rank=3), Candidate("b", 0.95, {}, rank=1), Candidate("c", 0.93, {}, rank=2),
                  Candidate("d", 0.5, {}, rank=4)]
    choose(candidates, StandOut(0.9, 0.0, 1.0, 2, "recall", note_floor=None))
    assert {c.memory_id: c.reason for c in candidates} == {"b": KEPT, "c": KEPT, "a": "over the cap",
                                                          "d": "below the floor"}
    choose(candidates, StandOut(0.9, 0.0, 1.0, 2, "relevance"))
    assert {c.memory_id for c in candidates if c.reason == KEPT} == {"a", "b"}
    with pytest.raises(Exception, match="order"):
        StandOut(0.9, order="random")


@pytest.mark.parametrize("seed", range(5))
def test_the_margin_grid_keeps_what_choose_keeps_with_recall_scores(seed):
    """RecallOrderGrid.chosen_margin is choose(order="recall", close 1, lead 0) with the note floor and the margin,
    the candidates carrying recall's scores."""
    rng = random.Random(200 + seed)
    prompts = []
    for _ in range(60):
        p = _prompt(rng, rng.choice(["related", "unrelated"]), rng.randint(0, 20))
        p["candidates"] = [(m, None, inputs, place) for place, (m, _, inputs) in enumerate(p["candidates"], 1)]
        p["scores"] = {m: round(1.0 - 0.5 * rng.random() * (place > 1), 3) for m, _, _, place in p["candidates"]}
        prompts.append(p)
    relevance = lambda inputs: inputs["score"]  # noqa: E731
    grid = injection_folds.RecallOrderGrid(prompts, relevance)
    for floor, note_floor, cap, margin in [(0.8, 0.0, 2, 0.7), (0.6, 0.5, 3, 0.9), (0.9, 0.9, 2, 0.0), (0.7, 0.2, 2, 1.0)]:
        chosen = grid.chosen_margin(floor, note_floor, cap, margin)
        for i, p in enumerate(prompts):
            candidates = [Candidate(m, relevance(inputs), {"id": m}, rank=place, score=p["scores"][m])
                          for m, _, inputs, place in p["candidates"]]
            choose(candidates, StandOut(floor, 0.0, 1.0, cap, "recall", note_floor, margin))
            kept = {c.memory_id for c in candidates if c.reason == KEPT}
            assert kept == {c[0] for j, c in enumerate(injection_folds.in_recall_order(p)) if chosen[i, j]}, (seed, i)


def test_a_second_note_needs_recall_to_score_it_close_to_the_first_and_says_so():
    def candidates(second_score):
        return [Candidate("a", 0.95, {}, rank=1, score=1.0), Candidate("b", 0.3, {}, rank=2, score=second_score),
                Candidate("c", 0.99, {}, rank=3, score=0.2)]
    close = candidates(0.8)
    thresholds = choose(close, StandOut(0.9, cap=2, note_floor=0.0, margin=0.7))
    # recall's second goes in whatever its relevance; the most relevant, recall's third, is over the cap
    assert {c.memory_id: c.reason for c in close} == {"a": KEPT, "b": KEPT, "c": "over the cap"}
    assert thresholds["second_over_first"] == 0.8
    far = candidates(0.5)
    choose(far, StandOut(0.9, cap=2, note_floor=0.0, margin=0.7))
    assert {c.memory_id: c.reason for c in far} == {"a": KEPT, "b": "recall's second far below first",
                                                    "c": "recall's second far below first"}
    floored = candidates(0.8)
    choose(floored, StandOut(0.9, cap=2, note_floor=0.5, margin=0.7))
    assert {c.memory_id: c.reason for c in floored} == {"a": KEPT, "b": "below the note floor", "c": KEPT}
    quiet = [Candidate("a", 0.85, {}, rank=1, score=1.0), Candidate("b", 0.3, {}, rank=2, score=0.9)]
    choose(quiet, StandOut(0.9, cap=2, note_floor=0.0, margin=0.7))  # the best under the floor: nothing
    assert {c.memory_id: c.reason for c in quiet} == {"a": "below the floor", "b": "below the floor"}
    unscored = [Candidate("a", 0.95, {}, rank=1), Candidate("b", 0.3, {}, rank=2)]
    assert "second_over_first" not in choose(unscored, StandOut(0.9, cap=2, note_floor=0.0, margin=0.7))
    assert [c.reason for c in sorted(unscored, key=lambda c: c.rank)] == [KEPT, KEPT]  # no scores: no margin
    for bad in ({"margin": 1.5}, {"margin": float("nan")}, {"note_floor": -0.1}, {"margin": True}):
        with pytest.raises(Exception, match="note_floor" if "note_floor" in bad else "margin"):
            StandOut(0.9, **bad)


def test_saved_runs_of_one_set_are_joined_on_load(tmp_path):
    """Two runs of LongMemEval positions (and one of LoCoMo) load as one list per set, in the files' order."""
    def prompt(name: str) -> dict:
        return {"kind": "related", "evidence": ["a"], "candidates": [["a", 0.9, {"cosine": 0.5}, 2]], "q": name}
    (tmp_path / "a.json").write_text(json.dumps({"locomo": [prompt("l")], "lme": [prompt("x")]}))
    (tmp_path / "b.json").write_text(json.dumps({"lme": [prompt("y"), prompt("z")]}))
    sets = injection_folds.load_saved(f"{tmp_path / 'a.json'},{tmp_path / 'b.json'}")
    assert [p["q"] for p in sets["lme"]] == ["x", "y", "z"] and [p["q"] for p in sets["locomo"]] == ["l"]
    assert sets["lme"][0]["evidence"] == {"a"} and sets["lme"][0]["candidates"][0][2]["reciprocal_rank"] == 0.5
