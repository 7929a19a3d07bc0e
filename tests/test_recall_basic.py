"""Recall (issue 2 scope): channels, scoring, tags, time windows, sorting, envelope."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from localmem import ValidationError
from localmem.pytest_plugin import FIXED_NOW

from store_helpers import DIMS, unit


def ids(response):
    return [r["id"] for r in response["results"]]


def test_worked_example_scores_0_792(memory_store):
    """The spec's sample: vector 0.82, keyword 2/3, tag 1/3, importance/confidence 0.9, 54 days old."""
    memory_id = memory_store.store(
        "Chose PostgreSQL over MongoDB for the primary database.",
        tags=["project-alpha", "database"], importance=0.9, confidence=0.9, type="Decision",
        timestamp="2025-01-15T10:30:00+00:00", embedding=unit((0, 1.0)),
    )
    response = memory_store.recall(
        "PostgreSQL database decisions",
        embedding=unit((0, 0.82), (1, math.sqrt(1 - 0.82 ** 2))),
        now="2025-03-10T10:30:00+00:00",
    )
    [result] = response["results"]
    assert result["id"] == memory_id
    assert result["match_type"] == "vector"
    components = result["score_components"]
    assert components["vector"] == pytest.approx(0.82, abs=1e-6)
    assert components["keyword"] == pytest.approx(2 / 3)
    assert components["tag"] == pytest.approx(1 / 3)
    assert components["recency"] == pytest.approx(0.7)
    assert components["importance"] == 0.9 and components["confidence"] == 0.9
    assert components["exact"] == 0.0 and components["context"] == 0.0
    assert components["evidence"] == pytest.approx(0.82, abs=1e-6)
    assert components["relevance_gated"] is False
    assert round(result["final_score"], 3) == 0.792
    assert response["keywords"] == ["postgresql", "database", "decisions"]
    assert response["vector_search"] == {"enabled": True, "matched": True, "token_scored": 0}


def test_response_envelope_has_every_key(memory_store):
    memory_store.store("Deploys happen on Tuesdays", tags=["ops"])
    response = memory_store.recall("deploys")
    for key in ("status", "query", "results", "count", "dedup_removed", "sort", "state_mode",
                "state_filter", "keywords", "vector_search", "tag_mode", "tag_match", "query_time_ms"):
        assert key in response, key
    assert response["status"] == "success"
    assert response["count"] == len(response["results"]) == 1
    assert response["state_filter"] == {"current_only": True, "suppressed_count": 0, "replacement_count": 0}
    result = response["results"][0]
    for key in ("id", "memory", "final_score", "match_type", "score_components", "relations"):
        assert key in result
    assert set(result["score_components"]) >= {
        "vector", "keyword", "metadata", "relation", "tag", "importance", "confidence",
        "recency", "exact", "relevance", "context", "evidence", "relevance_gated"}


def test_keyword_hit_gets_its_cosine_and_vector_hit_its_keyword_share(memory_store):
    # Only the query vector finds `near`; only FTS finds `worded` (its vector points elsewhere).
    near = memory_store.store("Completely unrelated words here", embedding=unit((0, 1.0)))
    worded = memory_store.store("The zanzibar protocol handshake", embedding=unit((0, 0.3), (5, 1.0)))
    response = memory_store.recall("zanzibar handshake", embedding=unit((0, 1.0)), adaptive_floor=False)
    by_id = {r["id"]: r for r in response["results"]}
    assert by_id[near]["match_type"] == "vector"
    assert by_id[near]["score_components"]["keyword"] == 0.0
    assert by_id[worded]["score_components"]["vector"] == pytest.approx(0.3 / math.sqrt(1.09), abs=1e-5)
    # Found by both channels: the vector channel wins, with the keyword share of its content.
    assert by_id[worded]["match_type"] == "vector"
    assert by_id[worded]["score_components"]["keyword"] == 1.0


def test_keyword_only_candidate_gets_normalised_bm25(memory_store_factory):
    store = memory_store_factory(embedder="none")
    memory_id = store.store("Chose PostgreSQL over MongoDB for the primary database.",
                            tags=["project-alpha", "database"])
    response = store.recall("PostgreSQL database decisions")
    [result] = response["results"]
    assert result["id"] == memory_id and result["match_type"] == "keyword"
    # Two of three keywords, each once: BM25 over the ideal match is 2/3 (the
    # unknown keyword "decisions" weighs as much as the known ones).
    assert result["score_components"]["keyword"] == pytest.approx(2 / 3)
    assert result["match_score"] == pytest.approx(2 / 3)
    assert response["vector_search"]["enabled"] is False
    assert response["degraded"] is True and response["degraded_reason"] == "embedding_unavailable"


def test_automem_keyword_scoring_preset(memory_store_factory):
    from localmem import Config
    store = memory_store_factory(embedder="none",
                                 config=Config.from_env({"LOCALMEM_KEYWORD_SCORING": "automem"}))
    store.store("Chose PostgreSQL over MongoDB for the primary database.",
                tags=["project-alpha", "database"])
    [result] = store.recall("PostgreSQL database decisions")["results"]
    # AutoMem's substring score: 2+2 (content) + 1 (tag) over 3*3+3.
    assert result["score_components"]["keyword"] == pytest.approx(5 / 12)


def test_keyword_score_weighs_rare_words_over_common_ones(memory_store_factory):
    store = memory_store_factory(embedder="none")
    for i in range(8):
        store.store(f"meeting notes number {i} about the roadmap")
    rare = store.store("meeting notes on zanzibar")
    common = store.store("meeting notes on the roadmap")
    results = {r["id"]: r for r in store.recall("zanzibar roadmap", limit=20,
                                                 adaptive_floor=False)["results"]}
    assert results[rare]["score_components"]["keyword"] > results[common]["score_components"]["keyword"]
    assert 0 < results[rare]["score_components"]["keyword"] <= 1


def test_fts_syntax_in_query_is_plain_text(memory_store):
    memory_store.store('He said "NEAR(alpha beta)" AND left: OR not')
    for query in ['"unbalanced', 'NEAR(alpha beta', 'alpha* -beta', 'col:value', '(', 'AND OR NOT', "'; DROP TABLE memories; --"]:
        response = memory_store.recall(query)
        assert response["status"] == "success"
    assert memory_store.health()["memory_count"] == 1


def test_trending_without_query_orders_by_importance(memory_store):
    low = memory_store.store("low", importance=0.1)
    high = memory_store.store("high", importance=0.95)
    mid = memory_store.store("mid", importance=0.5)
    response = memory_store.recall(limit=10, adaptive_floor=False)
    assert ids(response) == [high, mid, low]
    assert {r["match_type"] for r in response["results"]} == {"trending"}
    # AutoMem counts importance twice for trending: once as the keyword channel score.
    assert response["results"][0]["score_components"]["keyword"] == 0.95
    assert memory_store.recall(query="*", limit=10, adaptive_floor=False)["count"] == 3


@pytest.fixture
def tagged(memory_store):
    s = memory_store
    return s, {
        "general": s.store("channel general", tags=["slack:channel:general"]),
        "user": s.store("a user", tags=["Slack:User:U123"]),
        "alpha_db": s.store("alpha db", tags=["project-alpha", "database"]),
        "alpha": s.store("alpha only", tags=["project-alpha"]),
        "template": s.store("a template", tags=["template"]),
        "temp": s.store("temp draft", tags=["temp:draft"]),
        "path": s.store("path style", tags=["project/foo"]),
    }


@pytest.mark.parametrize("tags, mode, match, expected", [
    (["slack"], "any", "prefix", {"general", "user"}),
    (["slack:channel"], "any", "prefix", {"general"}),
    (["SLACK:user:u123"], "any", "prefix", {"user"}),
    (["sla"], "any", "prefix", set()),  # a prefix is a whole segment, not a substring
    (["slack"], "any", "exact", set()),
    (["slack:channel:general"], "any", "exact", {"general"}),
    (["project-alpha", "database"], "any", "exact", {"alpha_db", "alpha"}),
    (["project-alpha", "database"], "all", "exact", {"alpha_db"}),
    (["project-alpha", "database"], "all", "prefix", {"alpha_db"}),
    (["project:foo"], "any", "prefix", {"path"}),
    (["project/foo"], "any", "prefix", {"path"}),
    (["temp"], "any", "prefix", {"temp"}),
])
def test_tag_filters(tagged, tags, mode, match, expected):
    store, named = tagged
    response = store.recall(tags=tags, tag_mode=mode, tag_match=match, limit=50, adaptive_floor=False)
    assert set(ids(response)) == {named[n] for n in expected}
    assert response["tag_mode"] == mode and response["tag_match"] == match
    assert response["tags"]
    assert response["tag_scope"]["filtered"] is True


def test_exclude_tags_match_whole_segments(tagged):
    store, named = tagged
    response = store.recall(exclude_tags=["temp", "slack"], limit=50, adaptive_floor=False)
    got = set(ids(response))
    assert named["temp"] not in got and named["general"] not in got and named["user"] not in got
    assert named["template"] in got  # unlike AutoMem's raw startswith, `temp` does not exclude `template`
    assert response["exclude_tags"] == ["temp", "slack"]


def test_exclude_tags_comma_separated_and_with_query(tagged):
    store, named = tagged
    response = store.recall("alpha", exclude_tags="database,slack", limit=50, adaptive_floor=False)
    got = set(ids(response))
    assert named["alpha"] in got and named["alpha_db"] not in got


def test_tag_scope_applies_to_vector_and_keyword_channels(memory_store):
    inside = memory_store.store("kubernetes cluster upgrade notes", tags=["ops"])
    outside = memory_store.store("kubernetes cluster upgrade notes too", tags=["dev"])
    response = memory_store.recall("kubernetes cluster", tags=["ops"], limit=10)
    assert ids(response) == [inside]
    assert outside not in ids(response)


@pytest.fixture
def timeline(memory_store):
    s = memory_store
    now = FIXED_NOW  # 2025-03-10 (a Monday) 10:30 UTC
    stamps = {
        "hour_ago": now - timedelta(hours=1),
        "yesterday": now - timedelta(days=1),
        "three_days": now - timedelta(days=3),
        "last_month": datetime(2025, 2, 14, tzinfo=timezone.utc),
        "last_year": datetime(2024, 6, 1, tzinfo=timezone.utc),
    }
    return s, {name: s.store(f"event {name}", timestamp=ts) for name, ts in stamps.items()}


@pytest.mark.parametrize("expr, expected", [
    ("today", {"hour_ago"}),
    ("yesterday", {"yesterday"}),
    ("last 24 hours", {"hour_ago", "yesterday"}),  # both bounds inclusive: exactly 24 h ago is in
    ("last 48 hours", {"hour_ago", "yesterday"}),
    ("this week", {"hour_ago"}),
    ("last week", {"yesterday", "three_days"}),
    ("this month", {"hour_ago", "yesterday", "three_days"}),
    ("last month", {"last_month"}),
    ("last 30 days", {"hour_ago", "yesterday", "three_days", "last_month"}),
    ("this year", {"hour_ago", "yesterday", "three_days", "last_month"}),
    ("last year", {"last_year"}),
    ("two weeks ago", set()),  # the week of 2025-02-24
    ("the day before the launch", {"hour_ago", "yesterday", "three_days", "last_month", "last_year"}),
])
def test_time_query_windows(timeline, expr, expected):
    store, named = timeline
    response = store.recall(time_query=expr, limit=50, adaptive_floor=False)
    assert set(ids(response)) == {named[n] for n in expected}
    assert response["time_window"]["expression"] == expr
    if expr != "the day before the launch":
        assert response["sort"] == "time_desc"  # a window without a query sorts newest first
        assert "warnings" not in response
    else:  # not understood: no window, and the answer says so
        assert response["time_window"]["start"] is None and response["sort"] == "score"
        assert "not understood" in response["warnings"][0]


def test_explicit_start_end_override_time_query(timeline):
    store, named = timeline
    response = store.recall(time_query="this year", start="2025-03-01T00:00:00Z", limit=50)
    assert set(ids(response)) == {named["hour_ago"], named["yesterday"], named["three_days"]}
    assert response["time_window"]["start"] == "2025-03-01T00:00:00+00:00"
    with pytest.raises(ValidationError, match="Invalid start time"):
        store.recall(start="not a date")
    with pytest.raises(ValidationError, match="Invalid end time"):
        store.recall(end="2025-13-45")


def test_sort_modes(memory_store):
    s = memory_store
    old = s.store("alpha note old", timestamp="2024-01-01T00:00:00Z", importance=0.9)
    new = s.store("alpha note new", timestamp="2025-01-01T00:00:00Z", importance=0.2)
    s.update(old, updated_at="2025-02-01T00:00:00Z")
    by_time = s.recall("alpha note", sort="time_desc", limit=10)
    assert ids(by_time) == [old, new]  # updated_at counts before timestamp
    assert ids(s.recall("alpha note", sort="time_asc", limit=10)) == [new, old]
    assert ids(s.recall("alpha note", order_by="updated_desc", limit=10)) == [old, new]
    with pytest.raises(ValidationError, match="'sort' must be one of score, time_desc"):
        s.recall("alpha note", sort="bogus")
    scored = s.recall("alpha note", limit=10, adaptive_floor=False)
    scores = [r["final_score"] for r in scored["results"]]
    assert scores == sorted(scores, reverse=True)


def test_limit_is_checked_and_capped(memory_store):
    for i in range(7):
        memory_store.store(f"note number {i}")
    for bad in (0, -5, "abc"):
        with pytest.raises(ValidationError, match="'limit'"):
            memory_store.recall(limit=bad, adaptive_floor=False)
    capped = memory_store.recall(limit=10**9, adaptive_floor=False)
    assert capped["count"] == 7 and "above the maximum" in capped["warnings"][0]
    assert memory_store.recall(adaptive_floor=False)["count"] == 5


def test_duplicate_content_is_deduplicated(memory_store):
    first = memory_store.store("Use **ruff** for linting!", importance=0.3)
    second = memory_store.store("use ruff for linting", importance=0.9)
    response = memory_store.recall("ruff linting", limit=10)
    [result] = response["results"]
    assert result["id"] == second  # the higher score survives
    assert result["deduped_from"] == sorted([first, second])


def test_bad_parameters_are_rejected(memory_store):
    memory_store.store("something")
    with pytest.raises(ValidationError, match="state_mode"):
        memory_store.recall("x", state_mode="sometimes")
    with pytest.raises(ValidationError, match="exactly 384"):
        memory_store.recall(embedding=[0.1] * 3)
    with pytest.raises(ValidationError):
        memory_store.recall(embedding=[float("nan")] * DIMS)
    with pytest.raises(ValidationError, match="Unknown recall parameter"):
        memory_store.recall("x", colour="blue")
    with pytest.raises(ValidationError):
        memory_store.recall("bad \x00 byte")


def test_embedding_as_comma_string(memory_store):
    memory_id = memory_store.store("vector as text", embedding=unit((3, 1.0)))
    text = ",".join(str(v) for v in unit((3, 1.0)))
    assert ids(memory_store.recall(embedding=text)) == [memory_id]


def test_current_state_hides_expired_and_future(memory_store):
    s = memory_store
    live = s.store("fact live")
    s.store("fact expired", t_invalid="2025-01-01T00:00:00Z")
    s.store("fact future", t_valid="2026-01-01T00:00:00Z")
    current = s.recall("fact", limit=10, adaptive_floor=False)
    assert ids(current) == [live]
    assert current["state_filter"]["suppressed_count"] == 2
    history = s.recall("fact", state_mode="history", limit=10)
    assert history["count"] == 3 and "state_filter" not in history
    assert s.recall("fact", current_only=False, state_mode="current", limit=10)["count"] == 3


def _trending_store(store, importances, label="note"):
    # Old and unconfident, so a trending score is 0.45 x importance (keyword + importance weights).
    return [store.store(f"{label} {i}", importance=imp, confidence=0.0, timestamp="2020-01-01T00:00:00Z")
            for i, imp in enumerate(importances)]


def test_adaptive_floor_cuts_below_a_clear_drop(memory_store):
    made = _trending_store(memory_store, [0.9, 0.85, 0.3, 0.1, 0.05, 0.0])
    response = memory_store.recall(limit=6)
    # Largest gap in the top half is 0.85 -> 0.3; AutoMem's floor is the score below the gap.
    assert ids(response) == made[:3]
    assert response["score_filter"] == {"min_score": 0.0, "adaptive_floor": pytest.approx(0.45 * 0.3),
                                        "filtered_count": 3}
    assert memory_store.recall(limit=6, adaptive_floor=False)["count"] == 6


def test_adaptive_floor_keeps_all_when_cut_would_drop_more_than_half(memory_store):
    _trending_store(memory_store, [0.9, 0.3, 0.2, 0.1, 0.05, 0.0])
    response = memory_store.recall(limit=6)
    assert response["count"] == 6 and "score_filter" not in response


def test_adaptive_floor_needs_more_than_three_results_and_score_sort(memory_store):
    _trending_store(memory_store, [0.9, 0.1, 0.0])
    assert memory_store.recall(limit=6)["count"] == 3
    _trending_store(memory_store, [0.85, 0.05, 0.01], label="other")
    assert memory_store.recall(limit=6, sort="time_desc")["count"] == 6


def test_min_score_filters_and_reports(memory_store):
    _trending_store(memory_store, [0.9, 0.5, 0.1])
    response = memory_store.recall(limit=6, min_score=0.2)
    assert response["count"] == 2
    assert response["score_filter"] == {"min_score": 0.2, "adaptive_floor": None, "filtered_count": 0,
                                        "candidates_below_min_score": 1}


def test_min_score_says_how_many_it_removed_before_the_answer(memory_store):
    # min_score cuts each query's candidates before the final gate (AutoMem's filtered_count
    # counts only that one): an empty answer still says what the threshold left out.
    for text in ("garden tomatoes", "garden roses", "garden fence"):
        memory_store.store(text, importance=0.1, confidence=0.0, timestamp="2020-01-01T00:00:00Z")
    response = memory_store.recall("garden", limit=6, min_score=0.99)
    assert response["count"] == 0
    assert response["score_filter"]["filtered_count"] == 0
    assert response["score_filter"]["candidates_below_min_score"] == 3
    # The same memory cut in two queries counts once.
    both = memory_store.recall(queries=["garden", "garden tomatoes"], limit=6, min_score=0.99)
    assert both["count"] == 0 and both["score_filter"]["candidates_below_min_score"] == 3
    assert "candidates_below_min_score" not in memory_store.recall("garden", limit=6, min_score=0.0).get(
        "score_filter", {})


def test_recall_updates_last_accessed(memory_store_factory):
    later = FIXED_NOW + timedelta(days=2)
    store = memory_store_factory(now=later)
    memory_id = store.store("remember this", timestamp=FIXED_NOW)
    assert store.get(memory_id)["last_accessed"] == "2025-03-10T10:30:00+00:00"
    store.recall("remember")
    assert store.get(memory_id)["last_accessed"] == "2025-03-12T10:30:00+00:00"


def test_dedupe_merges_by_id_and_by_content_and_the_higher_score_holds():
    from localmem.recall.ranking import dedupe

    def result(rid: str, content: str, score: float, stamp: str = "2024-01-01T00:00:00+00:00") -> dict:
        return {"id": rid, "final_score": score, "memory": {"content": content, "timestamp": stamp}}

    first = result("a", "Coffee at nine", 0.5)
    same_text = result("b", "coffee at  NINE", 0.9)  # the same fingerprint, a higher score
    again = result("a", "Coffee at nine", 0.7)  # the same id again
    other = result("c", "Tea at four", 0.3)
    newer_tie = result("d", "Tea at four", 0.3, "2025-01-01T00:00:00+00:00")  # a tie: the newer holds
    alone = result("e", "", 0.1)  # no fingerprint: merged by id only
    survivors, removed = dedupe([first, same_text, other, again, alone, newer_tie, result("e", "", 0.2)])
    assert removed == 4
    assert [r["id"] for r in survivors] == ["b", "d", "e"]
    assert survivors[0]["deduped_from"] == ["a", "b"] and survivors[1]["deduped_from"] == ["c", "d"]
    assert survivors[2]["final_score"] == 0.2 and "deduped_from" not in survivors[2]
    assert "deduped_from" not in same_text  # the winners are copied, not changed
    assert dedupe([first, first]) == ([first], 1)
