"""The keyword channel's evidence as an input of ``relevance`` (docs/relevance.md, issue 40).

``keyword`` is a memory's BM25 for the query over the BM25 of a memory matching every searched
term once: IDF-weighted coverage, read the same way by both routes, never from the other results.
"""

from __future__ import annotations

import math

import pytest

from localmem import MemoryStore
from localmem.recall.relevance_model import FEATURES, RelevanceModel, relevance_features, relevance_of

RUFF = "Preference: format and lint Python with ruff; no black, no isort."
OTHERS = ["The CI pipeline runs on GitHub Actions.", "Releases are tagged on Fridays.", "ok, thanks",
          "The orders API exposes refunds."]


@pytest.fixture()
def store():
    with MemoryStore(":memory:", embedder="hash") as store:
        for text in (RUFF, *OTHERS):
            store.store(text, tags=["project:x"])
        yield store


def keyword_inputs(store: MemoryStore, query: str) -> dict[str, dict[str, float]]:
    """Per route, each current result's content -> its keyword input."""
    recall = store.recall(query, tags=["project:x"], limit=5)["results"]
    v1 = [r for r in store.recall_v1(query, k=5)["results"] if not r["folded"]]
    return {"recall": {r["memory"]["content"]: r["score_components"]["relevance_inputs"]["keyword"] for r in recall},
            "recall_v1": {store.get(r["memory_id"])["content"]: r["score_components"]["relevance_inputs"]["keyword"]
                          for r in v1}}


def test_both_routes_carry_it_and_read_it_alike(store: MemoryStore) -> None:
    found = keyword_inputs(store, "how should I format code here?")
    for route, inputs in found.items():
        assert set(inputs) == {RUFF, *OTHERS}, route
        assert 0.0 < inputs[RUFF] <= 1.0, route
        assert all(inputs[text] == 0.0 for text in OTHERS), (route, inputs)  # no query word: no evidence
    assert found["recall"][RUFF] == pytest.approx(found["recall_v1"][RUFF], abs=1e-6)


def test_more_of_the_query_matched_reads_more_evidence_and_more_relevance(store: MemoryStore) -> None:
    one = keyword_inputs(store, "how should I format code here?")["recall"][RUFF]
    three = keyword_inputs(store, "format with ruff and isort")["recall"][RUFF]
    assert three > one > 0
    model = RelevanceModel.from_dict({"intercept": -3, "floor": 0.5, "coefficients": {
        "cosine": 1, "coverage": 1, "token": 1, "keyword": 2}})
    base = {"cosine": 0.3, "coverage": 0.5, "token": 0.4}
    assert relevance_of(relevance_features(**base, keyword=three), model) > \
        relevance_of(relevance_features(**base, keyword=one), model)


def test_a_competitor_superseded_does_not_lower_it(store: MemoryStore) -> None:
    twin = store.store("Preference: format Python with black and isort.", tags=["project:x"])
    query = "format python with ruff, black or isort?"
    before = keyword_inputs(store, query)
    store.supersede(twin, "Preference: black is retired here; see the ruff note.", tags=["project:x"])
    after = keyword_inputs(store, query)
    for route in ("recall", "recall_v1"):
        assert after[route][RUFF] >= before[route][RUFF] > 0, route


@pytest.mark.parametrize("query", ['"unbalanced', "ruff* OR NEAR(black isort)", "format -ruff ^lint",
                                   "ruff " * 2000, "fo\u0301rmat r\u00fcff \U0001F600"])
def test_hostile_queries_keep_it_finite_and_in_range(store: MemoryStore, query: str) -> None:
    for inputs in keyword_inputs(store, query).values():
        assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in inputs.values()), inputs


def test_a_model_file_fitted_before_the_input_existed_still_loads() -> None:
    old = RelevanceModel.from_dict({"intercept": -6, "floor": 0.79,
                                    "coefficients": {"cosine": 4.6, "coverage": 4.0, "token": 4.2}})
    assert dict(zip(FEATURES, old.coefficients))["keyword"] == 0.0
    features = relevance_features(cosine=0.5, coverage=0.5, token=0.5, keyword=1.0)
    assert relevance_of(features, old) == relevance_of({**features, "keyword": 0.0}, old)
