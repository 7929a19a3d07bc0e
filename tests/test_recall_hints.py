"""Multi-query, decomposition, metadata sidecar, context hints, priority ids and gates in recall."""

from __future__ import annotations

import pytest

from localmem import Config
from localmem.recall.pipeline import Recall
from localmem.recall.params import parse_recall_params


@pytest.fixture
def store(memory_store_factory):
    return memory_store_factory(embedder="none")


def ids(response):
    return [r["id"] for r in response["results"]]


def by_id(response):
    return {r["id"]: r for r in response["results"]}


def test_multi_query_merges_and_counts_cross_query_duplicates(store):
    both = store.store("redis and kafka together")
    redis = store.store("redis cache eviction")
    kafka = store.store("kafka topic retention")
    response = store.recall(queries=["redis", "kafka"], limit=10, adaptive_floor=False)
    assert set(ids(response)) == {both, redis, kafka}
    assert response["dedup_removed"] == 1  # `both` came back from each query
    assert response["queries"] == ["redis", "kafka"] and "keywords" not in response
    assert {r["_query"] for r in response["results"]} <= {"redis", "kafka"}
    # comma-separated form, and per_query_limit caps each query's share
    capped = store.recall(queries="redis,kafka", per_query_limit=1, limit=10, adaptive_floor=False)
    assert capped["count"] == 2


def test_auto_decompose_adds_name_and_topic_queries(store):
    store.store("Caroline wants to study psychology")
    response = store.recall("Would Caroline pursue counseling as a career?", auto_decompose=True,
                            limit=5)
    queries = response["queries"]
    assert queries[0] == "Would Caroline pursue counseling as a career?"
    assert "Caroline" in queries and "Caroline counseling" in queries
    assert "Caroline interests goals plans" in queries
    assert response["count"] == 1
    # ignored when explicit queries are given
    assert store.recall(queries=["psychology"], auto_decompose=True)["queries"] == ["psychology"]


def test_metadata_sidecar_admits_and_scores_metadata_matches(memory_store_factory):
    store = memory_store_factory(embedder="none")
    hit = store.store("Deploy checklist", metadata={"tool": "Claude Code"})
    store.store("Unrelated note", metadata={"tool": "vim"})
    response = store.recall("notes for claude code")
    result = by_id(response)[hit]
    assert result["match_type"] == "metadata"
    # 0.15 + 0.45·(2 hits / 2 value tokens) + 0.20·(2 / 3 query terms) + 0.15 exact
    assert result["score_components"]["metadata"] == pytest.approx(0.15 + 0.45 + 0.20 * 2 / 3 + 0.15)
    off = memory_store_factory(embedder="none",
                               config=Config.from_env({"RECALL_METADATA_SEARCH_ENABLED": "false"}))
    off.store("Deploy checklist", metadata={"tool": "Claude Code"})
    assert off.recall("notes for claude code")["count"] == 0


def test_metadata_upgrade_of_a_seen_candidate(store):
    memory_id = store.store("claude code deploy tips", metadata={"tool": "Claude Code"})
    [result] = store.recall("deploy notes for claude code")["results"]
    assert result["id"] == memory_id
    assert result["match_type"] == "metadata"  # the upgrade outscored the keyword copy
    assert result["score_components"]["keyword"] > 0 and result["score_components"]["metadata"] > 0


def test_context_tags_add_the_bonus_without_filtering(store):
    tagged = store.store("deploy pipeline notes", tags=["ops:ci"])
    plain = store.store("deploy pipeline notes too")
    response = store.recall("deploy pipeline", context_tags=["ops"], adaptive_floor=False)
    results = by_id(response)
    assert results[tagged]["score_components"]["context"] == pytest.approx(0.45)
    assert results[plain]["score_components"]["context"] == 0.0
    assert ids(response)[0] == tagged
    assert response["context_priority"]["priority_tags"] == ["ops"]
    assert response["context_priority"]["injected"] is False


def test_active_path_detects_language_and_injects_a_style_memory(store):
    style = store.store("Use black and type hints everywhere", tags=["python:style"], type="Style")
    for i in range(4):
        store.store(f"error handling approach {i} with retries")
    response = store.recall("error handling", active_path="src/app/main.py", limit=2)
    block = response["context_priority"]
    assert block["language"] == "python"
    assert "Style" in block["priority_types"] and "python:style" in block["priority_tags"]
    assert block["injected"] is True
    assert style in ids(response)
    assert by_id(response)[style]["score_components"]["context"] >= 0.45 + 0.25


def test_priority_ids_are_fetched_boosted_and_placed_first(store):
    store.store("apple pie recipe", importance=0.9)
    store.store("apple crumble recipe", importance=0.9)
    outsider = store.store("completely different subject", importance=0.1)
    response = store.recall("apple recipe", priority_ids=[outsider], limit=2)
    assert ids(response)[0] == outsider
    result = response["results"][0]
    assert result["match_type"] == "priority_id"
    assert result["score_components"]["context"] == pytest.approx(0.9)
    assert response["count"] == 2


def test_priority_ids_still_pass_every_filter(store):
    store.store("apple pie recipe", tags=["food"])
    outside_scope = store.store("different subject", tags=["work"])
    old = store.store("superseded subject", tags=["food"])
    store.supersede(old, "newer subject text", tags=["elsewhere"])
    response = store.recall("apple", tags=["food"], priority_ids=[outside_scope, old], limit=3)
    assert outside_scope not in ids(response)
    assert old not in ids(response)


def test_relevance_gate_scales_metadata_components(memory_store_factory):
    gated = memory_store_factory(embedder="none", config=Config.from_env({"RECALL_RELEVANCE_GATE": "0.9"}))
    gated.store("kafka retention tuning", importance=1.0, confidence=1.0)
    [result] = gated.recall("kafka retention partitions")["results"]
    components = result["score_components"]
    assert components["relevance_gated"] is True
    evidence = components["evidence"]
    assert evidence < 0.9
    assert components["importance"] == pytest.approx(1.0 * evidence / 0.9)


def test_excluded_types_never_returned(memory_store_factory):
    store = memory_store_factory(embedder="none", config=Config.from_env({"RECALL_EXCLUDED_TYPES": "Habit"}))
    store.store("daily standup habit", type="Habit")
    kept = store.store("daily standup notes", type="Context")
    assert ids(store.recall("daily standup", limit=5)) == [kept]
    assert ids(store.recall(limit=5)) == [kept]


def test_vector_overfetch_sizes(memory_store):
    def fetch(raw, limit, has_text, env=None):
        config = Config.from_env(env or {})
        params = parse_recall_params(raw, config, 384, memory_store.now())
        memory_store.config = config
        return Recall(memory_store, params).vector_fetch_size(limit, has_text)

    assert fetch({}, 5, True) == 20
    assert fetch({}, 100, True) == 200
    assert fetch({"tags": ["x"]}, 5, True) == 20  # no AutoMem tag widening: the kNN runs within the scope
    assert fetch({"tags": ["x"]}, 5, False) == 20
    assert fetch({}, 5, True, {"RECALL_VECTOR_OVERFETCH": "1"}) == 5
    assert fetch({}, 5, True, {"RECALL_VECTOR_FETCH_CAP": "8"}) == 8


def test_last_accessed_tracking_can_be_switched_off(memory_store_factory):
    store = memory_store_factory(embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
    memory_id = store.store("untouched", timestamp="2024-01-01T00:00:00Z")
    store.recall("untouched")
    assert store.get(memory_id)["last_accessed"] == "2024-01-01T00:00:00+00:00"


def test_expansions_do_not_update_last_accessed(memory_store_factory):
    store = memory_store_factory(embedder="none")
    seed = store.store("seed text", timestamp="2024-01-01T00:00:00Z")
    other = store.store("neighbour", timestamp="2024-01-01T00:00:00Z")
    store.associate(seed, other)
    response = store.recall("seed", expand_relations=True)
    assert other in ids(response)
    assert store.get(other)["last_accessed"] == "2024-01-01T00:00:00+00:00"
    assert store.get(seed)["last_accessed"] != "2024-01-01T00:00:00+00:00"


def test_metadata_term_index_follows_updates_and_deletes(store):
    memory_id = store.store("Deploy checklist", metadata={"tool": "Claude Code"})
    assert ids(store.recall("notes for claude code")) == [memory_id]
    store.update(memory_id, metadata={"tool": "vim"})
    assert store.recall("notes for claude code")["count"] == 0
    assert ids(store.recall("notes for the tool vim")) == [memory_id]
    store.delete(memory_id)
    assert store.conn.execute("SELECT count(*) FROM memory_metadata_terms").fetchone()[0] == 0
