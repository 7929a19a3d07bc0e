"""CandidateScorer: the score of one candidate, with the per-query work done once."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from localmem.config import Config
from localmem.recall.scoring import COMPONENT_KEYS, CandidateScorer, ScoreInputs, metadata_terms, score_candidate

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
MEMORY = {"id": "m1", "content": "Postgres chosen", "tags": ["Database", "project:alpha"],
          "importance": 0.8, "confidence": 0.6, "timestamp": "2025-05-01T00:00:00+00:00",
          "relevance_score": 0.5, "type": "Decision",
          "metadata": {"source": "Slack", "nested": {"owner": "Ada Lovelace", "entities": ["hidden"]},
                       "entities": ["skipped"], "list": ["Ticket-42", 7]}}


def weights(config: Config) -> tuple[float, ...]:
    return tuple(getattr(config, f"weight_{key}") for key in COMPONENT_KEYS)


def test_final_score_is_the_weighted_sum_of_the_components() -> None:
    config = Config()
    final, components = CandidateScorer("postgres database", ["postgres", "database"], NOW, config).score(
        "vector", 0.7, 0.7, None, 0.0, MEMORY, keyword=0.4)
    assert final == pytest.approx(sum(components[k] * w for k, w in zip(COMPONENT_KEYS, weights(config))))
    assert components["vector"] == 0.7 and components["keyword"] == 0.4
    assert components["tag"] == 0.5  # "database" is a tag, "postgres" is not
    assert components["relevance_gated"] is False and components["context"] == 0.0


def test_one_scorer_gives_what_score_candidate_gives_for_every_candidate() -> None:
    config = Config()
    scorer = CandidateScorer("slack", ["slack"], NOW, config)
    for similarity, keyword in ((0.9, 0.0), (None, 0.3), (-0.2, 1.0)):
        inputs = ScoreInputs(match_type="keyword", match_score=0.0, similarity=similarity,
                             relation_score=None, metadata_score=0.0, memory=MEMORY, keyword=keyword)
        assert scorer.score("keyword", 0.0, similarity, None, 0.0, MEMORY, keyword) == \
            score_candidate(inputs, "slack", ["slack"], NOW, config)
    assert scorer.score("keyword", 0.0, None, None, 0.0, MEMORY)[1]["exact"] == 1.0  # a metadata value


def test_relevance_gate_scales_the_non_evidence_components() -> None:
    config = Config(relevance_gate=0.5)
    _, open_components = CandidateScorer("x", [], NOW, config).score("vector", 0.0, 0.25, None, 0.0, MEMORY)
    final, gated = CandidateScorer("x", ["x"], NOW, config).score("vector", 0.0, 0.25, None, 0.0, MEMORY)
    assert open_components["relevance_gated"] is False  # no keywords: no gate
    assert gated["relevance_gated"] is True
    for key in ("importance", "confidence", "recency", "relevance"):
        assert gated[key] == pytest.approx(open_components[key] * 0.5)
    assert final == pytest.approx(sum(gated[k] * w for k, w in zip(COMPONENT_KEYS, weights(config))))


def test_metadata_terms_walk_nested_values_and_skip_entities() -> None:
    terms = metadata_terms(MEMORY["metadata"])
    assert {"slack", "ada lovelace", "ada", "lovelace", "ticket-42"} <= terms
    assert "hidden" not in terms and "skipped" not in terms
    assert metadata_terms(["Top", {"k": "Level"}]) == {"top", "level"}
    assert metadata_terms({}) == set()


def test_usable_cosine_and_stored_numbers_reject_what_is_no_evidence() -> None:
    from localmem.recall.scoring import _number, usable_cosine
    assert usable_cosine(0.5) == 0.5 and usable_cosine(1.0005) == 1.0 and usable_cosine(-1.0005) == -1.0
    assert usable_cosine(1) == 1.0 and usable_cosine(0) == 0.0
    for bad in (float("nan"), float("inf"), -float("inf"), 1.5, -1.01, None, True, "0.5"):
        assert usable_cosine(bad) is None, bad
    assert _number(0.25) == 0.25 and _number(3) == 3.0 and isinstance(_number(3), float)
    for bad in (float("nan"), float("inf"), None, True, "0.5"):
        assert _number(bad) == 0.0, bad


def test_recency_decays_from_the_scorer_s_clock() -> None:
    config = Config()
    day = 86400.0
    scorer = CandidateScorer("x", ["x"], NOW, config)
    for days in (0, 10, config.recency_window_days / 2, 400):
        stamp = datetime.fromtimestamp(NOW.timestamp() - days * day, tz=timezone.utc).isoformat()
        _, components = scorer.score("vector", 0.0, 0.5, None, 0.0, {**MEMORY, "timestamp": stamp})
        assert components["recency"] == pytest.approx(max(0.0, 1.0 - days / config.recency_window_days))


@pytest.mark.parametrize("text", [
    "2025-05-01T00:00:00+00:00", "2025-05-01T10:30:00.123456+00:00", "2025-05-01T10:30:00Z",
    "2025-05-01T10:30:00+05:30", "2025-05-01T10:30:00", "2025-05-01", " 2025-05-01T10:30:00+00:00 ",
    "20250501T103000Z", "garbage", "2025-13-01T00:00:00+00:00"])
def test_a_timestamp_s_epoch_is_what_parse_timestamp_gives(text: str) -> None:
    from localmem.recall.scoring import parse_epoch
    from localmem.timeparse import parse_timestamp
    try:
        expected = parse_timestamp(text).timestamp()
    except Exception:
        expected = None
    assert parse_epoch(text) == expected


def test_terms_read_from_the_stored_texts_score_as_the_parsed_record_does() -> None:
    """Recall passes the metadata terms and lowercased tags it read from the stored JSON
    texts (cached by text); the score must be the one worked out from the record."""
    import json

    from localmem.recall.scoring import lowered_tags_of_text, metadata_terms_of_text
    config = Config()
    memories = [MEMORY, {**MEMORY, "tags": [], "metadata": {}}, {**MEMORY, "tags": ["SLACK", "x:y"],
                                                                   "metadata": {"speaker": "Slack"}}]
    for query, tokens in (("slack", ["slack"]), ("database owner", ["database", "owner"]), ("", [])):
        scorer = CandidateScorer(query, tokens, NOW, config)
        for memory in memories:
            tags_text, metadata_text = json.dumps(memory["tags"]), json.dumps(memory["metadata"])
            meta_terms, lowered = metadata_terms_of_text(metadata_text), lowered_tags_of_text(tags_text)
            assert meta_terms == metadata_terms(memory["metadata"])
            for similarity, keyword in ((0.9, 0.0), (None, 0.3)):
                reference = scorer.score("vector", 0.5, similarity, None, 0.0, memory, keyword)
                assert scorer.score("vector", 0.5, similarity, None, 0.0, memory, keyword,
                                    meta_terms=meta_terms, lowered_tags=lowered) == reference
    assert metadata_terms_of_text("") == frozenset() and lowered_tags_of_text("") == frozenset()
    assert lowered_tags_of_text('{"not": "a list"}') is None and lowered_tags_of_text("[1]") is None


@pytest.mark.parametrize("value", [0.5, 1.0005, -1.0005, 1.0, 0.0, -0.0, -0.3, 1, 0, True, 1.5, -1.01, None, "0.5",
                                   float("nan"), float("inf"), -float("inf")])
def test_the_scorer_s_inline_checks_give_what_the_helpers_give(value: object) -> None:
    """The usual cases of usable_cosine and _number are inline in CandidateScorer.score;
    every kind of value scores as the helpers say, damaged ones included."""
    from localmem.recall.scoring import _number, usable_cosine
    cosine = usable_cosine(value)
    memory = {**MEMORY, "importance": value, "confidence": value, "relevance_score": value}
    _, components = CandidateScorer("x", [], NOW, Config()).score("vector", 0.0, value, None, 0.0, memory)
    expected_vector = max(0.0, cosine) if cosine is not None else 0.0
    assert components["vector"] == expected_vector and type(components["vector"]) is type(expected_vector)
    for key in ("importance", "confidence", "relevance"):
        assert components[key] == _number(value) and type(components[key]) is float, key
    if value is not None:  # None: no centred cosine, the plain one counts
        _, centred = CandidateScorer("x", [], NOW, Config()).score("vector", 0.0, 0.9, None, 0.0, MEMORY,
                                                                   centred=value)
        assert centred["vector"] == expected_vector  # the centred cosine, when given, stands in for the plain one


@pytest.mark.parametrize("keyword", [0.5, 1.0, 0.0, -0.0, 1.5, -0.2, 1, 0, True, float("nan"), float("inf")])
@pytest.mark.parametrize("match_type", ["keyword", "trending"])
def test_the_scorer_s_keyword_and_relation_checks_give_what_the_helpers_give(keyword: object,
                                                                              match_type: str) -> None:
    from localmem.recall.scoring import _number, keyword_component
    scorer = CandidateScorer("x", [], NOW, Config())
    for relation in (None, 0.4, float("nan"), 2):
        _, components = scorer.score(match_type, 0.7, 0.5, relation, 0.0, MEMORY, keyword=keyword)
        expected = keyword_component(match_type, 0.7, keyword)
        assert repr(components["keyword"]) == repr(expected)  # the same float, sign and type included
        assert repr(components["relation"]) == repr(_number(relation))


def test_evidence_keeps_each_memory_s_best_cosine_and_keyword_score_over_queries() -> None:
    from localmem.recall.relevance import Evidence
    evidence = Evidence()
    evidence.add([{"id": "a", "memory": MEMORY, "_similarity": 0.3, "_keyword": 0.0},
                  {"id": "b", "memory": MEMORY, "_similarity": None, "_keyword": 0.4}])
    evidence.add([{"id": "a", "memory": MEMORY, "_similarity": 0.2, "_keyword": 0.6},
                  {"id": "b", "memory": MEMORY, "_similarity": -1.0, "_keyword": None},
                  {"id": "c", "memory": MEMORY, "_similarity": -0.0}])
    assert evidence.cosine == {"a": 0.3, "b": -1.0, "c": -0.0}
    assert evidence.keyword == {"a": 0.6, "b": 0.4}
    assert set(evidence.memories) == {"a", "b", "c"}
