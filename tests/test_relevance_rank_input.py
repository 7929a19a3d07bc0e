"""The answer's own ranking as an input of ``relevance`` (docs/relevance.md, issue 40).

``reciprocal_rank`` is 1 / a result's place in the answer ordered by the ranking's score: the
first result reads 1. Removing a competitor (superseding it) can only raise it.
"""

from __future__ import annotations

import pytest

from localmem import MemoryStore
from localmem.recall.relevance_model import RelevanceModel, reciprocal_ranks, relevance_features, relevance_of

NOTES = ["Preference: format and lint Python with ruff; no black, no isort.",
         "Preference: format Python code with black before each commit.",
         "The CI pipeline runs on GitHub Actions.", "Releases are tagged on Fridays."]
QUERY = "how do we format python code?"


def test_reciprocal_ranks_share_places_on_ties_and_put_the_missing_last() -> None:
    assert reciprocal_ranks([0.9, 0.5, 0.7]) == [1.0, 1 / 3, 0.5]
    assert reciprocal_ranks([0.5, 0.5, 0.2]) == [1.0, 1.0, 1 / 3]
    assert reciprocal_ranks([None, float("nan"), 0.1, "x"]) == [0.5, 0.5, 1.0, 0.5]
    assert reciprocal_ranks([]) == []


def ranks_by_content(store: MemoryStore, query: str) -> dict[str, dict[str, float]]:
    recall = store.recall(query, tags=["project:x"], limit=10)["results"]
    v1 = [r for r in store.recall_v1(query, k=10)["results"] if not r["folded"]]
    return {"recall": {r["memory"]["content"]: r["score_components"]["relevance_inputs"]["reciprocal_rank"]
                       for r in recall},
            "recall_v1": {store.get(r["memory_id"])["content"]: r["score_components"]["relevance_inputs"]
                          ["reciprocal_rank"] for r in v1}}


def test_both_routes_read_the_first_result_as_one_and_the_rest_by_place() -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        for text in NOTES:
            store.store(text, tags=["project:x"])
        body = store.recall(QUERY, tags=["project:x"], limit=10)
        places = [r["score_components"]["relevance_inputs"]["reciprocal_rank"] for r in body["results"]]
        scores = [r["final_score"] for r in body["results"]]
        assert len(set(scores)) == len(scores) >= 3  # no ties here: each place is its own
        assert places == pytest.approx([1 / n for n in range(1, len(places) + 1)], abs=1e-6)
        v1 = [r["score_components"]["relevance_inputs"]["reciprocal_rank"]
              for r in store.recall_v1(QUERY, k=10)["results"] if not r["folded"]]
        assert v1[0] == 1.0 and v1 == sorted(v1, reverse=True)


def test_superseding_a_competitor_never_lowers_it() -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        ids = [store.store(text, tags=["project:x"]) for text in NOTES]
        before = ranks_by_content(store, QUERY)
        store.supersede(ids[1], "Preference: black is retired here; see the ruff note.", tags=["project:x"])
        after = ranks_by_content(store, QUERY)
    for route in ("recall", "recall_v1"):
        for text in (NOTES[0], *NOTES[2:]):
            if text in before[route] and text in after[route]:
                assert after[route][text] >= before[route][text], (route, text)


def test_a_higher_place_reads_more_relevant_with_a_positive_weight() -> None:
    model = RelevanceModel.from_dict({"intercept": -3, "floor": 0.5, "coefficients": {
        "cosine": 1, "coverage": 1, "token": 1, "keyword": 1, "reciprocal_rank": 2}})
    base = {"cosine": 0.3, "coverage": 0.5, "token": 0.4, "keyword": 0.2}
    first, third = (relevance_of(relevance_features(**base, reciprocal_rank=r), model) for r in (1.0, 1 / 3))
    assert first > third
    # Out-of-range or damaged values are clipped or zeroed, never passed on.
    assert relevance_features(**base, reciprocal_rank=7)["reciprocal_rank"] == 1.0
    assert relevance_features(**base, reciprocal_rank=float("inf"))["reciprocal_rank"] == 0.0


@pytest.mark.parametrize("query", ['"unbalanced', "format* OR NEAR(black ruff)", "ruff " * 2000, "\U0001F600"])
def test_hostile_queries_keep_it_in_range(query: str) -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        for text in NOTES:
            store.store(text, tags=["project:x"])
        for values in ranks_by_content(store, query).values():
            assert all(0.0 < v <= 1.0 for v in values.values()), values
