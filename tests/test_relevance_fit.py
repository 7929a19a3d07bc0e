"""The relevance refit (benchmarks/quality/relevance_calibration.py, relevance_data.py): LongMemEval turns
stored in capture's shape, the floor chosen on held-out folds only, each set measured by a fit on
the other, and each set weighed equally however many prompts it has."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.quality import relevance_calibration as calibration  # noqa: E402
from benchmarks.quality import relevance_data  # noqa: E402
from localmem import MemoryStore  # noqa: E402
from localmem.hooks.capture import SOURCE_TAG  # noqa: E402

LONG = "word " * 900  # 4,500 characters: capture splits it


def instance(qid: str = "q1") -> dict:
    sessions = [[{"role": "user", "content": "I adopted a cat named Miso last spring.", "has_answer": True},
                 {"role": "assistant", "content": LONG, "has_answer": False}],
                [{"role": "user", "content": "Recommend a book on sailing.", "has_answer": False}],
                [{"role": "user", "content": "Remind me about the dentist.", "has_answer": False}]]
    return {"question_id": qid, "question": "What is my cat called?", "question_type": "single-session-user",
            "question_date": "2023/05/22 (Mon) 13:42", "answer_session_ids": ["s1"],
            "haystack_session_ids": ["s1", "s2", "s3"],
            "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00", "2023/05/03 (Wed) 10:00"],
            "haystack_sessions": sessions}


def test_lme_turns_are_stored_as_capture_stores_them() -> None:
    items, gold = relevance_data.lme_items(instance())
    assert [i["metadata"]["role"] for i in items] == ["user", "assistant", "assistant", "assistant", "user", "user"]
    assert all(len(i["content"]) <= 2000 for i in items)
    assert [i["metadata"].get("part") for i in items[1:4]] == [1, 2, 3]
    assert all(SOURCE_TAG in i["tags"] and "project:lme-q1" in i["tags"] for i in items)
    assert items[0]["content"] == "I adopted a cat named Miso last spring."  # verbatim: no "Speaker:" prefix
    assert gold == {items[0]["id"]}
    assert "has_answer" not in str(items)  # the label stays out of the store
    with MemoryStore(":memory:", embedder="hash") as store:
        questions = relevance_data.lme_questions(store, [instance()])
        assert store.health()["memory_count"] == len(items)
    assert questions[0]["gold"] == gold and questions[0]["scope"] == "project:lme-q1"


def test_a_question_is_asked_after_every_turn_of_its_own_day() -> None:
    """A session of the question's day with a later hour is stored before the question is
    asked (as capture stores it); asked at question_date's hour, recall would hide it as not
    yet valid, so its evidence would look unfindable."""
    later = instance()
    later["haystack_dates"][0] = "2023/05/22 (Mon) 18:30"  # the answer session, after 13:42
    with MemoryStore(":memory:", embedder="hash") as store:
        (question,) = relevance_data.lme_questions(store, [later])
        found = store.recall(question["question"], tags=[question["scope"]], now=question["now"])
    assert question["now"] == "2023-05-22T18:30:02+00:00"  # after its last turn (one second a turn)
    assert question["gold"] <= {r["id"] for r in found["results"]}
    assert found["state_filter"]["suppressed_count"] == 0


def test_a_session_subsample_keeps_every_answer_session() -> None:
    for sessions in (1, 2):
        kept = relevance_data.kept_sessions(instance(), sessions)
        assert 0 in kept and len(kept) == sessions
    assert relevance_data.kept_sessions(instance(), 0) == {0, 1, 2}
    items, gold = relevance_data.lme_items(instance(), 1)
    assert {i["metadata"]["session"] for i in items} == {"s1"} and gold


def synthetic(name: str, folds: int, rng: random.Random, shift: float) -> list[dict]:
    """Prompts whose positives have higher cosine and coverage; ``shift`` moves a set's cosines."""
    prompts = []
    for number in range(60):
        for kind in ("related", "unrelated"):
            results = []
            for rank in range(5):
                positive = kind == "related" and rank == 0
                base = 0.6 if positive else 0.2
                results.append({"cosine": base + shift + rng.gauss(0, 0.08), "token": base + rng.gauss(0, 0.1),
                                "coverage": min(1.0, max(0.0, base + rng.gauss(0, 0.2))),
                                "label": 1 if positive else (None if kind == "related" else 0), "words": 10})
            for route in calibration.ROUTES:
                prompts.append({"set": name, "fold": number % folds, "kind": kind, "route": route,
                                "gold": 1, "results": results})
    return prompts


def test_the_floor_comes_from_held_out_folds_and_each_set_is_measured_by_the_other() -> None:
    rng = random.Random(7)
    locomo, lme = synthetic("locomo", 5, rng, 0.0), synthetic("lme", 5, rng, -0.05)
    beta, floor = calibration.fitted(locomo)
    assert beta[1] > 0 and beta[2] > 0  # more cosine and coverage read more relevant
    scores = calibration.held_out_scores(locomo)
    assert all(calibration.silent_share(locomo, scores, floor, route) >= calibration.TARGET_SILENT
               for route in calibration.ROUTES)
    lower = round(floor - 0.01, 2)
    assert floor == calibration.FLOORS[0] or any(
        calibration.silent_share(locomo, scores, lower, route) < calibration.TARGET_SILENT
        for route in calibration.ROUTES)  # the lowest floor that meets the target
    measured, floors, across = calibration.across_sets(locomo, lme)
    assert across == floor and set(floors.values()) == {floor}
    found = calibration.measure(lme, measured, floors)["recall"]
    assert found["related"] == 60 and found["unrelated"] == 60
    assert 0.0 <= found["unrelated_silent"] <= 1.0 and found["per_prompt"] >= 0
    lines, _, _ = calibration.report(locomo + lme)
    assert any(line.startswith("| lme (fitted on locomo) | recall |") for line in lines)


def test_a_set_is_weighed_as_much_as_the_other_whatever_its_size() -> None:
    rng = random.Random(3)
    big, small = synthetic("locomo", 5, rng, 0.0), synthetic("lme", 5, rng, 0.0)[:40]
    beta_big = calibration.fit(big + small)
    beta_double = calibration.fit(big + big + small)  # the same set twice over changes nothing
    assert beta_big == pytest.approx(beta_double, rel=1e-6)
