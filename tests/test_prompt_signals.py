"""The prompt against the scope (recall/prompt_signals.py, issue 40): ``cosine_over_kth`` (a result's cosine
less the scope's 10th best for the query) and ``unseen_terms`` (the IDF-weighted share of the query's keywords
nothing in scope holds), read from what recall built and shown in every result's ``relevance_inputs``."""

from __future__ import annotations

import math
import random

import pytest

from localmem import MemoryStore
from localmem.recall.prompt_signals import KTH, kth_cosine, unseen_share
from localmem.recall.relevance_model import packaged_model, relevance_features

TOPICS = ["orders service database postgres", "billing invoices stripe webhook", "deploy pipeline github actions",
          "frontend react components", "logging with structlog", "cache redis eviction"]


def test_the_kth_cosine_is_clipped_at_zero_and_reads_zero_when_too_few() -> None:
    assert kth_cosine([0.9] * (KTH - 1)) == 0.0
    assert kth_cosine([0.5 - 0.01 * i for i in range(KTH)]) == pytest.approx(0.41)
    assert kth_cosine([-0.3] * (KTH + 5)) == 0.0
    assert kth_cosine([float("nan"), math.inf, *[0.2] * KTH]) == pytest.approx(0.2)


@pytest.mark.parametrize("seed", range(20))
def test_dropping_any_cosine_never_raises_the_kth(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.uniform(-0.5, 1.0) for _ in range(rng.randint(0, 30))]
    before = kth_cosine(values)
    for i in range(len(values)):
        assert kth_cosine(values[:i] + values[i + 1:]) <= before


def test_unseen_share_weighs_a_missing_rare_word_by_its_idf() -> None:
    assert unseen_share([], [], 100) == 0.0
    assert unseen_share(["a", "b"], [3, 50], 100) == 0.0
    assert unseen_share(["a", "b"], [0, 0], 100) == 1.0
    share = unseen_share(["common", "zebrafish"], [90, 0], 100)
    assert 0.9 < share < 1.0  # the word no memory holds outweighs one most memories hold
    assert unseen_share(["a", "b"], [5, 5], 100, absent_in_scope=["b"]) == pytest.approx(
        unseen_share(["a", "b"], [5, 0], 100))


def inputs_by_content(store: MemoryStore, query: str, **kwargs) -> dict[str, dict[str, float]]:
    body = store.recall(query, limit=20, **kwargs)
    return {r["memory"]["content"]: r["score_components"]["relevance_inputs"] for r in body["results"]}


def test_recall_shows_both_and_a_word_nothing_in_scope_holds_counts_as_unseen() -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        for n, topic in enumerate(TOPICS * 3):
            store.store(f"note {n}: {topic}", tags=["project:a"])
        store.store("the zebrafish tank is cleaned on mondays", tags=["project:b"])
        known = inputs_by_content(store, "which database does the orders service have?", tags=["project:a"])
        assert known and all(i["unseen_terms"] == 0.0 for i in known.values())
        assert all(set(i) >= {"cosine_over_kth", "unseen_terms"} for i in known.values())
        # "zebrafish" is in the store but not in project a: unseen within that scope, seen in the whole store.
        scoped = inputs_by_content(store, "orders database zebrafish", tags=["project:a"])
        assert all(i["unseen_terms"] > 0.5 for i in scoped.values())
        whole = inputs_by_content(store, "orders database zebrafish")
        assert all(i["unseen_terms"] == 0.0 for i in whole.values())


def test_a_smaller_scope_or_a_deleted_competitor_never_lowers_a_memorys_standing() -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        ids = [store.store(f"note {n}: {topic}", tags=["project:a"] if n % 2 else ["project:a", "team:x"])
               for n, topic in enumerate(TOPICS * 3)]
        query = "orders service database"
        wide = inputs_by_content(store, query, tags=["project:a"])
        narrow = inputs_by_content(store, query, tags=["team:x"])
        for content, inputs in narrow.items():
            assert inputs["cosine_over_kth"] >= wide[content]["cosine_over_kth"] - 1e-9
            assert inputs["unseen_terms"] >= wide[content]["unseen_terms"] - 1e-9
        store.delete(ids[1])
        after = inputs_by_content(store, query, tags=["project:a"])
        for content, inputs in after.items():
            assert inputs["cosine_over_kth"] >= wide[content]["cosine_over_kth"] - 1e-9
        # A scope of one: no 10th best, so the input is the memory's own cosine.
        single = inputs_by_content(store, query, tags=["team:none"]) or {}
        assert single == {}
        store.store("orders service database is postgres", tags=["project:solo"])
        (only,) = inputs_by_content(store, query, tags=["project:solo"]).values()
        assert only["cosine_over_kth"] == pytest.approx(only["cosine"])


@pytest.mark.parametrize("query", ['"orders" OR data* NEAR(x y)', "orders\x00database", "\ud800 orders",
                                   "zebrafish " * 5000])
def test_hostile_queries_give_finite_inputs(query: str) -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        for n, topic in enumerate(TOPICS * 2):
            store.store(f"note {n}: {topic}")
        try:
            results = store.recall(query, limit=5)["results"]
        except ValueError as error:  # refused with a clear error is fine; a crash or NaN is not
            assert "query" in str(error).lower()
            return
        for r in results:
            inputs = r["score_components"]["relevance_inputs"]
            assert all(math.isfinite(v) for v in inputs.values())
            assert 0.0 <= inputs["unseen_terms"] <= 1.0 and -1.0 <= inputs["cosine_over_kth"] <= 1.0


def test_the_shipped_model_reads_them_only_as_fitted() -> None:
    """The packaged coefficients say how much each weighs (0 when the file does not name one)."""
    model = packaged_model()
    base = relevance_features(cosine=0.5, coverage=0.5, token=0.6, keyword=0.4, reciprocal_rank=1.0)
    moved = {**base, "cosine_over_kth": 0.4, "unseen_terms": 0.8}
    weights = dict(zip(("cosine_over_kth", "unseen_terms"), model.coefficients[-2:]))
    expected_change = weights["cosine_over_kth"] * 0.4 + weights["unseen_terms"] * 0.8
    if expected_change == 0:
        assert model.probability(moved) == model.probability(base)
    else:
        assert model.probability(moved) != model.probability(base)


def test_recall_v1_leaves_them_out_rather_than_showing_zero() -> None:
    with MemoryStore(":memory:", embedder="hash") as store:
        for n, topic in enumerate(TOPICS * 2):
            store.store(f"note {n}: {topic}")
        results = [r for r in store.recall_v1("orders database zebrafish", k=5)["results"] if not r["folded"]]
    assert results
    for r in results:
        inputs = r["score_components"]["relevance_inputs"]
        assert "reciprocal_rank" in inputs and not {"cosine_over_kth", "unseen_terms"} & set(inputs)
