"""MemoryStore.recall_v1: Kagura's POST /api/v1/memory/recall through the Python API.

Most tests use a small table embedder (vectors chosen per text) so cosines,
and with them scores and confidence, are exact; the hash embedder covers
the ordinary path; the tests marked ``model`` use the real MiniLM model.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from localmem import Config, MemoryStore, NotFoundError, ValidationError
from localmem.kagura import RequestValidationError, restrict_contexts, set_reranker
from localmem.kagura import rerank as rerank_module
from localmem.pytest_plugin import FIXED_NOW

from tests.store_helpers import snapshot

RESPONSE_KEYS = {"results", "related_tags", "explore_hints", "tag_suggestions", "confidence",
                 "selector", "rerank", "learned_rank", "search_mode", "query_time_ms"}
MEMORY_RESPONSE_KEYS = {
    "memory_id", "summary", "context_summary", "type", "importance", "scope", "created_at",
    "updated_at", "client", "tags", "context", "score", "source_uri", "source_type",
    "superseded_by", "contradicts", "supersede_candidate", "folded", "version", "content",
    "content_truncated", "content_next_offset", "spans", "score_components",
    "relevance",  # localmem's extension: the calibrated relevance (recall/relevance_model.py)
}
CONFIDENCE_KEYS = {"level", "top_score", "prominence", "relative_margin", "result_count", "rationale",
                   "relevance", "relevant", "relevance_floor", "relevant_count"}  # the last four: localmem's
OTHER = [0.0, 0.0, 0.0, 1.0]


class TableEmbedder:
    """Vectors looked up by text (anything unknown points along the last axis)."""

    name = "table"
    dimensions = 4

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table.get(text, OTHER) for text in texts]


def unit(angle_degrees: float) -> list[float]:
    """A unit vector in the first plane at ``angle`` from the first axis (cosine = cos(angle))."""
    a = math.radians(angle_degrees)
    return [math.cos(a), math.sin(a), 0.0, 0.0]


@pytest.fixture
def make(memory_store_factory):
    def factory(table: dict[str, list[float]] | None = None, **kwargs: Any) -> MemoryStore:
        embedder = TableEmbedder(table) if table is not None else kwargs.pop("embedder", "hash")
        return memory_store_factory(embedder=embedder, **kwargs)
    return factory


def ids(response: dict[str, Any]) -> list[str]:
    return [r["memory_id"] for r in response["results"]]


def at(minutes: int) -> str:
    return (FIXED_NOW - timedelta(days=30) + timedelta(minutes=minutes)).isoformat()


# --- the response ---------------------------------------------------------------------


def test_response_and_memory_response_fields(make):
    store = make()
    memory_id = store.store(
        "Authentication errors came from expired JWT tokens; refresh them before retrying.",
        tags=["auth", "Bugs"], type="Insight", importance=0.8, context="work", timestamp=at(0),
        metadata={"context_summary": "debugging the login service", "client": "claude-code",
                  "source_uri": "https://example.org/ticket/42", "source_type": "ticket",
                  "scope": "Working"})
    response = store.recall_v1("authentication errors", filters={"context_id": "work"})
    assert set(response) == RESPONSE_KEYS  # no degraded keys when the search ran normally
    assert response["selector"] == {"applied": False, "reason": "no_provider"}
    assert response["search_mode"] == "hybrid"
    assert response["rerank"] == {"applied": False, "reason": "not_configured"}
    assert response["explore_hints"] is None and response["tag_suggestions"] is None
    [row] = response["results"]
    assert set(row) == MEMORY_RESPONSE_KEYS
    record = store.get(memory_id)
    assert row["memory_id"] == memory_id
    assert row["summary"] == record["summary"]
    assert row["context_summary"] == "debugging the login service"
    assert row["type"] == "Insight" and row["importance"] == 0.8
    assert row["scope"] == "working"
    assert row["created_at"] == record["timestamp"] and row["updated_at"] == record["updated_at"]
    assert row["client"] == "claude-code"
    assert row["tags"] == ["auth", "Bugs"] and row["context"] == "work"
    assert row["source_uri"] == "https://example.org/ticket/42" and row["source_type"] == "ticket"
    assert 0 < row["score"] <= 1
    assert row["superseded_by"] is None and row["contradicts"] == []
    assert row["supersede_candidate"] is None
    assert row["folded"] is False and row["version"] == 1
    assert row["content"] is None and row["content_truncated"] is None
    assert row["content_next_offset"] is None
    assert [s["term"] for s in row["spans"]] == ["authentication", "errors"]
    assert set(response["confidence"]) == CONFIDENCE_KEYS


def test_defaults_for_plain_memories(make):
    store = make()
    store.store("Plain note about the deploy pipeline", timestamp=at(0))
    [row] = store.recall_v1("deploy pipeline")["results"]
    assert row["scope"] == "persistent" and row["context"] == "default"
    assert row["client"] is None and row["context_summary"] is None
    assert row["source_uri"] is None and row["source_type"] is None


def test_k_limits_the_results(make):
    store = make()
    for n in range(8):
        store.store(f"Deploy note number {n} about the release train", timestamp=at(n))
    assert len(store.recall_v1("release train")["results"]) == 5
    assert len(store.recall_v1("release train", k=3)["results"]) == 3
    assert len(store.recall_v1("release train", k=100)["results"]) == 8


@pytest.mark.parametrize("arguments, field, kind", [
    ({"query": None}, "query", "missing"),
    ({"query": "   "}, "query", "string_too_short"),
    ({"query": 42}, "query", "string_type"),
    ({"query": "x" * 10_001}, "query", "string_too_long"),
    ({"k": 0}, "k", "greater_than_equal"),
    ({"k": 101}, "k", "less_than_equal"),
    ({"k": "many"}, "k", "int_parsing"),
    ({"k": True}, "k", "int_type"),
    ({"k": 2.5}, "k", "int_from_float"),
    ({"use_rerank": "yes"}, "use_rerank", "bool_type"),
    ({"filters": "work"}, "filters", "dict_type"),
    ({"filters": {"workspace": "x"}}, "filters.workspace", "extra_forbidden"),
    ({"filters": {"context_id": ""}}, "filters.context_id", "string_too_short"),
    ({"filters": {"context_id": 7}}, "filters.context_id", "string_type"),
    ({"filters": {"tags": 5}}, "filters.tags", "list_type"),
    ({"filters": {"tags": ["ok", 5]}}, "filters.tags.1", "string_type"),
    ({"filters": {"tag_mode": "most"}}, "filters.tag_mode", "literal_error"),
    ({"search_mode": "fuzzy"}, "search_mode", "literal_error"),
    ({"include_explore_hints": "true"}, "include_explore_hints", "bool_type"),
    ({"include_superseded": 1}, "include_superseded", "bool_type"),
    ({"full": -1}, "full", "greater_than_equal"),
    ({"full": "all"}, "full", "int_parsing"),
    ({"now": "yesterday-ish"}, "now", "datetime_parsing"),
])
def test_invalid_requests_are_422_and_change_nothing(make, arguments, field, kind):
    store = make()
    store.store("Something to find", timestamp=at(0))
    call = {"query": "something", **arguments}
    query = call.pop("query")
    before = snapshot(store)
    with pytest.raises(RequestValidationError) as excinfo:
        store.recall_v1(query, **call)
    error = excinfo.value
    assert isinstance(error, ValidationError) and error.code == 422
    [detail] = error.detail
    assert ".".join(str(p) for p in detail["loc"]) == f"body.{field}"
    assert detail["type"] == kind and detail["msg"]
    body = error.to_dict()
    assert body["status"] == "error" and body["code"] == 422 and body["detail"] == error.detail
    assert field.split(".")[0] in error.message
    assert snapshot(store) == before


def test_every_problem_is_reported(make):
    store = make()
    with pytest.raises(RequestValidationError) as excinfo:
        store.recall_v1("", k=0, search_mode="nope", filters={"bogus": 1})
    fields = [".".join(map(str, d["loc"][1:])) for d in excinfo.value.detail]
    assert fields == ["query", "k", "filters.bogus", "search_mode"]
    assert "3 more problems" in excinfo.value.message


# --- contexts -------------------------------------------------------------------------


@pytest.fixture
def two_contexts(make):
    store = make()
    work = store.store("Redis cache eviction policy is allkeys-lru", context="work", timestamp=at(0))
    home = store.store("Redis the cat eats at seven", context="home", timestamp=at(1))
    default = store.store("Redis notes in the default context", timestamp=at(2))
    return store, work, home, default


def test_context_filter_restricts_the_search(two_contexts):
    store, work, home, default = two_contexts
    assert set(ids(store.recall_v1("redis", k=10))) == {work, home, default}
    response = store.recall_v1("redis", k=10, filters={"context_id": "work"})
    assert ids(response) == [work]
    assert ids(store.recall_v1("redis", k=10, filters={"context_id": "default"})) == [default]


def test_missing_and_hidden_contexts_are_the_same_404(two_contexts):
    store, *_ = two_contexts
    with pytest.raises(NotFoundError) as missing:
        store.recall_v1("redis", filters={"context_id": "no-such-context"})
    with restrict_contexts(["work"]):
        with pytest.raises(NotFoundError) as hidden:
            store.recall_v1("redis", filters={"context_id": "home"})
        with pytest.raises(NotFoundError) as hidden_missing:
            store.recall_v1("redis", filters={"context_id": "no-such-context"})
    assert missing.value.code == hidden.value.code == 404
    assert missing.value.to_dict() == hidden.value.to_dict() == hidden_missing.value.to_dict() == {
        "status": "error", "code": 404, "message": "Context not found"}


def test_restricted_caller_sees_only_its_contexts(two_contexts):
    store, work, home, default = two_contexts
    with restrict_contexts(["work", "default"]):
        assert set(ids(store.recall_v1("redis", k=10))) == {work, default}
        with restrict_contexts(["work", "home"]):  # nested: narrows, never widens
            assert ids(store.recall_v1("redis", k=10)) == [work]
        with restrict_contexts(None):  # None keeps the outer restriction
            assert set(ids(store.recall_v1("redis", k=10))) == {work, default}
    assert len(store.recall_v1("redis", k=10)["results"]) == 3  # restriction ended


def test_related_tags_and_suggestions_never_leak_hidden_contexts(make):
    store = make()
    store.store("Secret launch plan", tags=["launch-plan"], context="hidden", timestamp=at(0))
    store.store("Public roadmap", tags=["roadmap"], context="open", timestamp=at(1))
    with restrict_contexts(["open"]):
        response = store.recall_v1("launch plan roadmap", filters={"tags": ["launch-plans"]})
    assert response["results"] == []
    assert response["tag_suggestions"] == {"launch-plans": []}
    assert [t["tag"] for t in response["related_tags"]] == ["roadmap"]


# --- filters --------------------------------------------------------------------------


def test_type_scope_and_tag_filters(make):
    store = make()
    insight = store.store("Deploys fail when the cache is cold", type="Insight", timestamp=at(0),
                          tags=["project:alpha:deploy"])
    decision = store.store("We decided to warm the cache before deploys", type="Decision",
                           timestamp=at(1), tags=["project:beta", "ops"])
    code = store.store("Cache warmer script for deploys", metadata={"type": "code", "scope": "working"},
                       timestamp=at(2), tags=["Ops"])
    everything = {insight, decision, code}
    assert set(ids(store.recall_v1("cache deploys", k=10))) == everything
    assert ids(store.recall_v1("cache deploys", filters={"type": "insight"})) == [insight]
    assert ids(store.recall_v1("cache deploys", filters={"type": "analysis"})) == [insight]  # an alias
    assert set(ids(store.recall_v1("cache deploys", filters={"type": ["Decision", "code"]}))) == {
        decision, code}
    assert ids(store.recall_v1("cache deploys", filters={"scope": "working"})) == [code]
    assert set(ids(store.recall_v1("cache deploys", filters={"scope": "persistent"}))) == {
        insight, decision}
    # tags: whole tags or hierarchical prefixes, case-insensitive, any (default) or all
    assert ids(store.recall_v1("cache deploys", filters={"tags": ["project:alpha"]})) == [insight]
    assert set(ids(store.recall_v1("cache deploys", filters={"tags": "project"}))) == {insight, decision}
    assert set(ids(store.recall_v1("cache deploys", filters={"tags": ["OPS"]}))) == {decision, code}
    assert ids(store.recall_v1("cache deploys", filters={
        "tags": ["project", "ops"], "tag_mode": "all"})) == [decision]
    assert ids(store.recall_v1("cache deploys", filters={"tags": ["project/alpha"]})) == [insight]


# --- search modes ---------------------------------------------------------------------


@pytest.fixture
def arms(make):
    """A matches both arms, B only the keyword (cosine 0.6), C only the vector (cosine 0.8)."""
    table = {"alpha": unit(0), "alpha beta": unit(0), "alpha gamma": unit(math.degrees(math.acos(0.6))),
             "delta": unit(math.degrees(math.acos(0.8)))}
    store = make(table)
    a = store.store("alpha beta", timestamp=at(0))
    b = store.store("alpha gamma", timestamp=at(1))
    c = store.store("delta", timestamp=at(2))
    return store, a, b, c


def test_hybrid_mixes_normalised_arms_sixty_forty(arms):
    store, a, b, c = arms
    response = store.recall_v1("alpha")
    assert ids(response) == [a, b, c]
    scores = {r["memory_id"]: r["score"] for r in response["results"]}
    assert scores[a] == pytest.approx(1.0)
    assert scores[b] == pytest.approx(0.6 * 0.6 + 0.4 * 1.0)
    assert scores[c] == pytest.approx(0.6 * 0.8)
    for row in response["results"]:
        components = row["score_components"]
        assert row["score"] == pytest.approx(0.6 * components["semantic"] + 0.4 * components["keyword"],
                                             abs=1e-5)
    assert response["results"][2]["score_components"]["bm25"] == 0.0


def test_semantic_and_keyword_modes(arms):
    store, a, b, c = arms
    semantic = store.recall_v1("alpha", search_mode="semantic")
    assert ids(semantic) == [a, c, b]
    assert [r["score"] for r in semantic["results"]] == pytest.approx([1.0, 0.8, 0.6], abs=1e-5)
    assert semantic["search_mode"] == "semantic"
    keyword = store.recall_v1("alpha", search_mode="KEYWORD")
    assert set(ids(keyword)) == {a, b}  # the vector-only memory is not a keyword hit
    assert max(r["score"] for r in keyword["results"]) == pytest.approx(1.0)
    assert keyword["search_mode"] == "keyword"
    assert ids(store.recall_v1("alpha", search_mode="hybrid")) == ids(store.recall_v1("alpha"))


def test_hybrid_weights_come_from_the_configuration(make):
    config = Config.from_env({"LOCALMEM_V1_SEMANTIC_WEIGHT": "0", "LOCALMEM_V1_KEYWORD_WEIGHT": "1"})
    assert (config.v1_semantic_weight, config.v1_keyword_weight) == (0.0, 1.0)
    table = {"alpha": unit(0), "alpha beta": unit(0), "alpha gamma": unit(53.13),
             "delta": unit(36.87)}
    store = make(table, config=config)
    store.store("alpha beta", timestamp=at(0))
    store.store("alpha gamma", timestamp=at(1))
    store.store("delta", timestamp=at(2))
    scores = {r["summary"]: r["score"] for r in store.recall_v1("alpha")["results"]}
    assert scores == pytest.approx({"alpha beta": 1.0, "alpha gamma": 1.0, "delta": 0.0})


def test_config_from_env_rejects_bad_values():
    from localmem import ConfigError

    with pytest.raises(ConfigError):
        Config.from_env({"LOCALMEM_V1_CONFIDENCE_BANDS": "0.5,0.4,0.6"})
    with pytest.raises(ConfigError):
        Config.from_env({"LOCALMEM_V1_CONFIDENCE_BANDS": "a,b,c"})
    with pytest.raises(ConfigError):
        Config.from_env({"LOCALMEM_V1_NEAR_DUPLICATE": "1.5"})
    config = Config.from_env({"LOCALMEM_V1_CONFIDENCE_BANDS": "0.1, 0.2, 0.3",
                              "LOCALMEM_RERANK_MODEL": " cross-encoder/x ",
                              "LOCALMEM_V1_NEAR_DUPLICATE": "0.9"})
    assert config.v1_confidence_bands == (0.1, 0.2, 0.3)
    assert config.rerank_model == "cross-encoder/x" and config.v1_near_duplicate == 0.9


def test_degraded_without_embedder(make):
    store = make(embedder="none")
    memory_id = store.store("Authentication errors come from expired tokens", timestamp=at(0))
    for mode in (None, "hybrid", "semantic"):
        response = store.recall_v1("authentication errors", search_mode=mode)
        assert ids(response) == [memory_id]
        assert response["degraded"] is True and response["degraded_reason"] == "embedding_unavailable"
        assert response["confidence"]["prominence"] is None
    keyword = store.recall_v1("authentication errors", search_mode="keyword")
    assert "degraded" not in keyword and "degraded_reason" not in keyword


def test_degraded_when_the_vector_index_fails(make):
    store = make()
    memory_id = store.store("Authentication errors come from expired tokens", timestamp=at(0))
    store.conn.execute("DROP TABLE vector_codes")
    response = store.recall_v1("authentication errors")
    assert ids(response) == [memory_id]
    assert response["degraded"] is True and response["degraded_reason"] == "vector_search_unavailable"


# --- confidence -----------------------------------------------------------------------


def test_confidence_on_hash_embeddings(make):
    store = make()
    text = "The staging database password rotates every ninety days"
    store.store(text, timestamp=at(0))
    store.store("Lunch order for the offsite: twelve sandwiches", timestamp=at(1))
    store.store("Quarterly planning moved to Thursday", timestamp=at(2))
    exact = store.recall_v1(text)["confidence"]
    assert exact["level"] == "high" and exact["top_score"] == pytest.approx(1.0, abs=1e-4)
    assert exact["result_count"] >= 1 and "cosine 1.000" in exact["rationale"]
    unrelated = store.recall_v1("zebra migration across the serengeti")["confidence"]
    assert unrelated["level"] in ("none", "low")
    assert unrelated["result_count"] == 0 or unrelated["top_score"] < 0.25


def test_confidence_fields_from_the_pool(make):
    # Query along the first axis; pool cosines 0.9, 0.5, 0.3 (background mean 0.4, std 0.1).
    table = {"q": unit(0), "m1": unit(math.degrees(math.acos(0.9))),
             "m2": unit(math.degrees(math.acos(0.5))), "m3": unit(math.degrees(math.acos(0.3)))}
    store = make(table)
    for n, text in enumerate(("m1", "m2", "m3")):
        store.store(text, timestamp=at(n))
    confidence = store.recall_v1("q")["confidence"]
    assert confidence["top_score"] == pytest.approx(0.9, abs=1e-4)
    assert confidence["prominence"] == pytest.approx((0.9 - 0.4) / 0.4, abs=1e-3)
    assert confidence["relative_margin"] == pytest.approx((0.9 - 0.4) / 0.1, abs=1e-2)
    assert confidence["level"] == "high" and confidence["result_count"] == 3


def test_confidence_bands_and_floors(make):
    flat = {"q": unit(0), "a": unit(math.degrees(math.acos(0.92))),
            "b": unit(math.degrees(math.acos(0.90))), "c": unit(math.degrees(math.acos(0.88)))}
    store = make(flat)
    for n, text in enumerate(("a", "b", "c")):
        store.store(text, timestamp=at(n))
    # Everything resembles the query about equally: high is demoted to moderate.
    confidence = store.recall_v1("q")["confidence"]
    assert confidence["prominence"] < 0.10 and confidence["level"] == "moderate"
    assert "barely stands out" in confidence["rationale"]
    # Bands are configurable; a near-duplicate top is never below moderate.
    strict = make({"q": unit(0), "same": unit(0)},
                  config=Config(v1_confidence_bands=(0.5, 1.5, 2.0)))
    strict.store("same", timestamp=at(0))
    confidence = strict.recall_v1("q")["confidence"]
    assert confidence["level"] == "moderate" and "near-duplicate" in confidence["rationale"]
    loose = make({"q": unit(0), "m": unit(math.degrees(math.acos(0.3)))},
                 config=Config(v1_confidence_bands=(0.1, 0.2, 0.25)))
    loose.store("m", timestamp=at(0))
    single = loose.recall_v1("q")["confidence"]
    assert single["level"] == "high"  # one candidate: bands alone decide
    assert single["prominence"] is None and single["relative_margin"] is None
    assert "single candidate" in single["rationale"]


def test_confidence_keyword_fallback_and_empty(make):
    store = make()
    store.store("Kafka consumer lag alert fired twice", timestamp=at(0))
    keyword = store.recall_v1("kafka consumer lag", search_mode="keyword")["confidence"]
    assert keyword["level"] == "low" and keyword["top_score"] == 1.0
    assert keyword["prominence"] is None and keyword["relative_margin"] is None
    assert "Keyword-only" in keyword["rationale"]
    for n in range(6):
        store.store(f"Unrelated kafka note {n}", timestamp=at(n + 1))
    separated = store.recall_v1("kafka consumer lag alert", search_mode="keyword")["confidence"]
    assert separated["level"] in ("moderate", "high") and separated["result_count"] == 5
    empty = store.recall_v1("zzzz", search_mode="keyword")["confidence"]
    assert empty == {"level": "none", "top_score": None, "prominence": None, "relative_margin": None,
                     "result_count": 0, "rationale": empty["rationale"],
                     "relevance": 0.0, "relevant": False, "relevance_floor": empty["relevance_floor"],
                     "relevant_count": 0}


# --- supersession ---------------------------------------------------------------------


@pytest.fixture
def chain(make):
    """v1 → v2 → v3 (each superseding the last); only v1 says 'mongodb'."""
    store = make()
    v1 = store.store("We store sessions in MongoDB", tags=["db"], timestamp=at(0), context="work")
    v2 = store.supersede(v1, "We moved sessions to PostgreSQL", tags=["db"], timestamp=at(1),
                         context="work")["memory_id"]
    v3 = store.supersede(v2, "Sessions now live in Redis with a PostgreSQL backup", tags=["db"],
                         timestamp=at(2), context="work", relation="EVOLVED_INTO")["memory_id"]
    return store, v1, v2, v3


def test_superseded_memories_fold_into_their_head(chain):
    store, v1, v2, v3 = chain
    response = store.recall_v1("mongodb sessions", k=10)
    assert ids(response) == [v3]
    [row] = response["results"]
    assert row["version"] == 3 and row["folded"] is False and row["superseded_by"] is None
    assert row["score_components"]["via_version"] in (v1, v2)
    # The head matched on its own too when asked about its own words.
    assert ids(store.recall_v1("redis backup", k=10)) == [v3]


def test_include_superseded_returns_folded_versions_as_rows(chain):
    store, v1, v2, v3 = chain
    response = store.recall_v1("mongodb sessions postgresql redis", k=10, include_superseded=True)
    assert ids(response) == [v3, v2, v1]
    head, second, first = response["results"]
    assert (head["folded"], head["version"], head["superseded_by"]) == (False, 3, None)
    assert (second["folded"], second["version"], second["superseded_by"]) == (True, 2, v3)
    assert (first["folded"], first["version"], first["superseded_by"]) == (True, 1, v2)
    # k counts heads: the folded rows ride along.
    assert ids(store.recall_v1("mongodb sessions postgresql redis", k=1, include_superseded=True)) == [
        v3, v2, v1]


def test_superseded_without_a_visible_head(make):
    store = make()
    old = store.store("Office wifi password is hunter2", context="office", timestamp=at(0))
    store.supersede(old, "Office wifi password moved to the vault", context="secrets", timestamp=at(1))
    with restrict_contexts(["office"]):
        assert store.recall_v1("office wifi password")["results"] == []
        response = store.recall_v1("office wifi password", include_superseded=True)
    [row] = response["results"]
    assert row["memory_id"] == old and row["folded"] is True and row["version"] == 1
    assert row["superseded_by"] is None  # the successor lives in a context the caller cannot see
    full = store.recall_v1("office wifi password", include_superseded=True, k=10)
    rows = {r["memory_id"]: r for r in full["results"]}
    assert rows[old]["superseded_by"] is not None


def test_expired_and_future_memories_follow_the_state_rules(make):
    store = make()
    expired = store.store("Temporary VPN bypass for the audit", t_invalid=at(5), timestamp=at(0))
    future = store.store("VPN maintenance window next month",
                         t_valid=(FIXED_NOW + timedelta(days=20)).isoformat(), timestamp=at(1))
    current = store.store("VPN config lives in the ops repo", timestamp=at(2))
    assert ids(store.recall_v1("vpn", k=10)) == [current]
    assert ids(store.recall_v1("vpn", k=10, include_superseded=True)) == [current]
    later = store.recall_v1("vpn", k=10, now=FIXED_NOW + timedelta(days=40))
    assert set(ids(later)) == {current, future}
    assert expired not in ids(later)


# --- content and spans ----------------------------------------------------------------


def test_full_carries_content_for_the_top_rows(make):
    store = make()
    long_text = ("Incident report: " + "the workers stalled and the queue backed up. " * 40).strip()
    long_id = store.store(long_text, timestamp=at(0))
    short_id = store.store("Short incident note: workers fine", timestamp=at(1))
    response = store.recall_v1("incident workers", full=1)
    first, second = response["results"]
    assert first["content"] == store.get(first["memory_id"])["content"][:1500]
    assert first["content_truncated"] is not None
    assert second["content"] is None and second["content_truncated"] is None
    assert second["content_next_offset"] is None
    rows = {r["memory_id"]: r for r in store.recall_v1("incident workers", full=5)["results"]}
    assert len(long_text) > 1500
    assert rows[long_id]["content"] == long_text[:1500]
    assert rows[long_id]["content_truncated"] is True and rows[long_id]["content_next_offset"] == 1500
    assert rows[short_id]["content"] == "Short incident note: workers fine"
    assert rows[short_id]["content_truncated"] is False and rows[short_id]["content_next_offset"] is None
    assert all(r["content"] is None for r in store.recall_v1("incident workers", full=0)["results"])
    assert all(r["content"] is None for r in store.recall_v1("incident workers")["results"])


def test_spans_mark_stemmed_matches_in_character_offsets(make):
    store = make()
    text = "Café Errors: the error log shows errors after deploying."
    store.store(text, timestamp=at(0))
    [row] = store.recall_v1("errors deploy")["results"]
    found = [(text[s["start"]:s["end"]], s["term"]) for s in row["spans"]]
    assert found == [("Errors", "errors"), ("error", "errors"), ("errors", "errors"),
                     ("deploying", "deploy")]
    accented = store.recall_v1("the cafe", k=1)["results"][0]["spans"]
    assert [(text[s["start"]:s["end"]], s["term"]) for s in accented] == [("Café", "cafe")]
    assert store.recall_v1("log", search_mode="semantic", k=1)["results"][0]["spans"][0]["start"] == 23


# --- related tags, tag suggestions, explore hints ---------------------------------------


def test_related_tags(make):
    store = make()
    store.store("Grafana alert for disk usage", tags=["Monitoring", "disk"], timestamp=at(0))
    store.store("Grafana dashboard for latency", tags=["monitoring", "latency"], timestamp=at(1))
    store.store("Unrelated note about monitoring costs", tags=["monitoring", "finance"], timestamp=at(2))
    store.store("Payroll runs on the 25th", tags=["finance"], timestamp=at(3))
    response = store.recall_v1("grafana", k=2, search_mode="keyword")
    tags = {t["tag"]: t for t in response["related_tags"]}
    first = response["results"][0]["tags"][0]
    assert list(tags)[0] == first and first.lower() == "monitoring"  # on both results
    assert tags[first]["count"] == 3
    assert tags[first]["sample_summary"] == "Unrelated note about monitoring costs"
    assert tags[first]["last_used_at"] == store.get(
        ids(store.recall_v1("monitoring costs", k=1))[0])["updated_at"]
    assert {t.lower() for t in tags} == {"monitoring", "disk", "latency"}
    empty = store.recall_v1("zzzz nothing here", search_mode="keyword")
    assert empty["results"] == []
    assert [t["tag"] for t in empty["related_tags"]][:2] == ["monitoring", "finance"]


def test_tag_suggestions_when_a_tag_filter_matches_nothing(make):
    store = make()
    store.store("Tip: use pathlib", tags=["python-tips"], timestamp=at(0))
    store.store("Index the foreign keys", tags=["tech:database"], timestamp=at(1))
    store.store("Vacuum weekly", tags=["postgres"], timestamp=at(2))
    response = store.recall_v1("tips", filters={"tags": ["Python_Tips", "databases", "postgress",
                                                         "kubernetes"]})
    assert response["results"] == []  # advisory only: the filter was not widened
    assert response["tag_suggestions"] == {
        "Python_Tips": ["python-tips"],
        "databases": ["tech:database"],
        "postgress": ["postgres"],
        "kubernetes": [],
    }
    matched = store.recall_v1("tips", filters={"tags": ["python-tips", "databse"]})
    assert len(matched["results"]) == 1
    assert matched["tag_suggestions"] == {"databse": ["tech:database"]}
    assert store.recall_v1("tips", filters={"tags": ["python-tips"]})["tag_suggestions"] is None
    assert store.recall_v1("tips")["tag_suggestions"] is None


def test_explore_hints(make):
    store = make()
    top = store.store("Checkout service latency spikes at noon", importance=0.9, timestamp=at(0))
    hub = store.store("Checkout service depends on the payments API", timestamp=at(1))
    other = store.store("Checkout service runbook", timestamp=at(2))
    neighbour = store.store("Payments API rate limits", timestamp=at(3))
    far = store.store("Team offsite agenda", timestamp=at(4))
    store.associate(hub, neighbour, "RELATES_TO", strength=0.9)
    store.associate(hub, far, "RELATES_TO", strength=0.2)
    store.associate(other, hub, "LEADS_TO")
    assert store.recall_v1("checkout service")["explore_hints"] is None
    response = store.recall_v1("checkout service latency", k=3, include_explore_hints=True)
    assert ids(response)[0] == top
    assert response["explore_hints"] == [
        {"memory_id": top, "reason": "top_result"},
        {"memory_id": hub, "reason": "high_centrality"},
        {"memory_id": neighbour, "reason": "unexplored_neighbor"},
    ]
    assert store.recall_v1("zzzz", search_mode="keyword", include_explore_hints=True)[
        "explore_hints"] == []


# --- contradicts and near-duplicates --------------------------------------------------


def test_contradicts_from_edges_in_either_direction(make):
    store = make()
    a = store.store("The release is on Friday", context="work", timestamp=at(0))
    b = store.store("The release is on Monday", context="work", timestamp=at(1))
    c = store.store("Release notes draft", context="private", timestamp=at(2))
    store.associate(a, b, "CONTRADICTS")
    store.associate(c, a, "CONTRADICTS")
    rows = {r["memory_id"]: r for r in store.recall_v1("release", k=10)["results"]}
    assert set(rows[a]["contradicts"]) == {b, c} and rows[b]["contradicts"] == [a]
    scoped = store.recall_v1("release", k=10, filters={"context_id": "work"})
    assert {r["memory_id"]: r["contradicts"] for r in scoped["results"]} == {a: [b], b: [a]}


def test_near_duplicates_are_suggested_never_applied(make):
    store = make(config=Config(track_access=False))
    text = "Standup moved to 9:30 on Tuesdays"
    old = store.store(text, context="work", tags=["meetings"], timestamp=at(0))
    new = store.store(text + ".", context="work", tags=["calendar"], timestamp=at(1))
    elsewhere = store.store(text, context="personal", timestamp=at(2))
    store.store("Lunch is at noon", context="work", timestamp=at(3))
    before = snapshot(store)
    rows = {r["memory_id"]: r for r in store.recall_v1("standup tuesdays", k=10)["results"]}
    expected = {"memory_id": new, "similarity": pytest.approx(1.0, abs=1e-3), "old_id": old, "new_id": new}
    assert rows[old]["supersede_candidate"] == expected
    assert rows[new]["supersede_candidate"] == {**expected, "memory_id": old}
    assert rows[elsewhere]["supersede_candidate"] is None  # another context
    # Found also when the pool cannot hold the neighbour (tag filter: per-result kNN).
    [row] = store.recall_v1("standup tuesdays", filters={"tags": ["meetings"]})["results"]
    assert row["supersede_candidate"]["memory_id"] == new
    [row] = store.recall_v1("standup", search_mode="keyword", filters={"tags": ["calendar"]})["results"]
    assert row["supersede_candidate"]["memory_id"] == old
    assert snapshot(store) == before  # a suggestion: nothing was written
    store.supersede(old, new)
    rows = {r["memory_id"]: r for r in store.recall_v1("standup tuesdays", k=10)["results"]}
    assert old not in rows and rows[new]["supersede_candidate"] is None


def test_near_duplicate_threshold_is_configurable(make):
    table = {"q": unit(0), "a": unit(0), "b": unit(math.degrees(math.acos(0.97)))}
    store = make(table)
    a = store.store("a", timestamp=at(0))
    store.store("b", timestamp=at(1))
    assert store.recall_v1("q")["results"][0]["supersede_candidate"]["similarity"] == pytest.approx(0.97)
    strict = make(table, config=Config(v1_near_duplicate=0.99))
    strict.store("a", timestamp=at(0))
    strict.store("b", timestamp=at(1))
    assert all(r["supersede_candidate"] is None for r in strict.recall_v1("q")["results"])
    assert a


# --- rerank ---------------------------------------------------------------------------


class LengthReranker:
    """A deterministic cross-encoder stand-in: shorter content is 'more relevant'."""

    name = "stand-in"

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs):
        self.calls.append(list(pairs))
        return [-len(content) for _, content in pairs]


@pytest.fixture
def rerank_store(make):
    store = make()
    long = store.store("Backup runbook: snapshots nightly, verified weekly, kept ninety days",
                       importance=0.9, timestamp=at(0))
    short = store.store("Backup snapshots", timestamp=at(1))
    return store, long, short


def test_rerank_with_a_stand_in(rerank_store):
    store, long, short = rerank_store
    assert ids(store.recall_v1("backup snapshots runbook nightly")) == [long, short]
    reranker = LengthReranker()
    set_reranker(store, reranker)
    response = store.recall_v1("backup snapshots runbook nightly", use_rerank=True)
    assert ids(response) == [short, long]
    assert response["rerank"] == {"applied": True, "model": "stand-in", "reranked": 2}
    assert [r["rerank_score"] for r in response["results"]] == [-16, -68]
    assert reranker.calls[-1][0][0] == "backup snapshots runbook nightly"
    # Omitted: follows the configuration (a reranker is set); false: never.
    assert store.recall_v1("backup snapshots runbook nightly")["rerank"]["applied"] is True
    off = store.recall_v1("backup snapshots runbook nightly", use_rerank=False)
    assert ids(off) == [long, short] and off["rerank"] == {"applied": False, "reason": "disabled"}
    assert "rerank_score" not in off["results"][0]
    # Confidence is not changed by reranking.
    assert off["confidence"] == response["confidence"]
    set_reranker(store, None)
    assert store.recall_v1("backup")["rerank"] == {"applied": False, "reason": "not_configured"}


def test_rerank_requested_but_unavailable(rerank_store, monkeypatch):
    store, long, short = rerank_store
    response = store.recall_v1("backup snapshots runbook nightly", use_rerank=True)
    assert ids(response) == [long, short]
    assert response["rerank"] == {"applied": False, "reason": "unavailable"}

    class Broken:
        def predict(self, pairs):
            raise RuntimeError("model crashed")

    set_reranker(store, Broken(), name="broken")
    response = store.recall_v1("backup snapshots runbook nightly", use_rerank=True)
    assert ids(response) == [long, short]
    assert response["rerank"] == {"applied": False, "reason": "unavailable", "model": "broken"}
    with pytest.raises(TypeError):
        set_reranker(store, object())


def test_rerank_model_from_the_configuration(make, monkeypatch):
    loads: list[str] = []

    def fake_load(model: str):
        loads.append(model)
        if model == "missing/model":
            raise OSError("not downloaded")
        return LengthReranker()

    monkeypatch.setattr(rerank_module, "_load", fake_load)
    store = make(config=Config(rerank_model="tiny/cross-encoder"))
    store.store("Backup runbook: snapshots nightly, verified weekly", timestamp=at(0))
    store.store("Backup snapshots", timestamp=at(1))
    response = store.recall_v1("backup snapshots")
    assert response["rerank"] == {"applied": True, "model": "tiny/cross-encoder", "reranked": 2}
    store.recall_v1("backup snapshots", use_rerank=True)
    assert loads == ["tiny/cross-encoder"]  # loaded once per store
    broken = make(config=Config(rerank_model="missing/model"))
    broken.store("Backup snapshots", timestamp=at(0))
    for _ in range(2):
        assert broken.recall_v1("backup")["rerank"] == {"applied": False, "reason": "unavailable"}
    assert loads == ["tiny/cross-encoder", "missing/model"]  # a failure is remembered


@pytest.mark.model
def test_rerank_model_that_cannot_load_is_unavailable(make):
    store = make(config=Config(rerank_model="/nonexistent/cross-encoder"))
    store.store("Backup snapshots", timestamp=at(0))
    response = store.recall_v1("backup", use_rerank=True)
    assert response["rerank"] == {"applied": False, "reason": "unavailable"}
    assert len(response["results"]) == 1


# --- bookkeeping ----------------------------------------------------------------------


def test_recall_v1_marks_results_accessed(make):
    store = make()
    memory_id = store.store("Renew the TLS certificate in March", timestamp=at(0))
    assert store.get(memory_id)["last_accessed"] == store.get(memory_id)["timestamp"]
    store.recall_v1("tls certificate", now=FIXED_NOW)
    assert store.get(memory_id)["last_accessed"] == FIXED_NOW.isoformat()


def test_recall_v1_over_http_style_keyword_arguments(make):
    store = make()
    memory_id = store.store("Deploy freeze starts on the 20th", context="ops", timestamp=at(0))
    response = store.recall_v1(**{"query": "deploy freeze", "k": "2", "filters": {"context_id": "ops"},
                                  "search_mode": None, "use_rerank": None, "full": None,
                                  "include_explore_hints": None, "include_superseded": None})
    assert ids(response) == [memory_id]


# --- real embeddings ------------------------------------------------------------------


REAL_MEMORIES = [
    "Caroline went to an LGBTQ support group meeting and found it really empowering.",
    "Melanie painted a sunset over the lake last weekend and plans to sell it at a fair.",
    "Caroline is researching adoption agencies because she wants to build a family.",
    "Melanie took her kids camping in the mountains and they roasted marshmallows.",
    "Jon lost his banking job and decided to open his own dance studio downtown.",
    "Gina started an online clothing store after being laid off from Door Dash.",
    "Caroline is studying to become a counselor for transgender youth.",
    "Melanie ran a charity 5k race for a mental health organisation.",
    "Jon practises contemporary dance every morning before going to the studio.",
    "Gina designed a new line of streetwear inspired by her travels to Paris.",
    "Melanie's daughter started pottery classes and made a bowl for her grandma.",
    "Caroline's friends threw her a surprise birthday party at the park.",
    "Jon is worried about paying rent for the studio during the slow summer months.",
    "Gina and Jon talked about how dance helped them both through hard times.",
    "Melanie is reading a novel about a family that moves to the countryside.",
]


@pytest.mark.model
def test_confidence_levels_on_real_embeddings(memory_store_factory):
    store = memory_store_factory(embedder="auto")
    store.store_many([{"content": text, "context": "friends", "timestamp": at(n)}
                      for n, text in enumerate(REAL_MEMORIES)])
    if not store.health()["embedder"]["available"]:
        pytest.skip(f"MiniLM is not available: {store.embedder_error}")
    on_topic = ["Why is Caroline looking into adoption agencies?",
                "What business did Jon start after losing his job?",
                "What did Melanie paint recently?"]
    off_topic = ["How do I configure TLS certificates for a Kubernetes ingress controller?",
                 "What is the boiling point of tungsten?",
                 "Which SQL isolation level prevents phantom reads?"]
    for question in on_topic:
        confidence = store.recall_v1(question, filters={"context_id": "friends"})["confidence"]
        assert confidence["level"] in ("moderate", "high"), (question, confidence)
        assert confidence["top_score"] >= 0.40
    for question in off_topic:
        confidence = store.recall_v1(question, filters={"context_id": "friends"})["confidence"]
        assert confidence["level"] in ("none", "low"), (question, confidence)
        assert confidence["top_score"] < 0.40
        # Kagura's prominence ratio would read these as prominent: the level does not use it.
        assert confidence["prominence"] is None or confidence["prominence"] > 0
