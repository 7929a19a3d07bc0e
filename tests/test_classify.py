from __future__ import annotations

import pytest

from localmem.classify import MEMORY_TYPES, TYPE_ALIASES, classify, normalize_memory_type
from localmem.errors import ValidationError


def test_memory_types_order() -> None:
    assert MEMORY_TYPES == (
        "Decision",
        "Pattern",
        "Preference",
        "Style",
        "Habit",
        "Insight",
        "Context",
    )


def test_type_aliases_are_read_only_and_canonical() -> None:
    assert set(TYPE_ALIASES.values()) <= set(MEMORY_TYPES)
    with pytest.raises(TypeError):
        TYPE_ALIASES["new"] = "Context"  # type: ignore[index]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Decision", "Decision"),
        ("decision", "Decision"),
        ("  INSIGHT ", "Insight"),
        ("memory", "Context"),
        ("meeting_notes", "Context"),
        ("Meeting Notes", "Context"),
        ("personal-situation", "Context"),
        ("observation", "Insight"),
        ("legal_analysis", "Insight"),
        ("template", "Pattern"),
        ("communication", "Preference"),
        ("emotional_patterns", "Preference"),
        ("health_habits", "Habit"),
    ],
)
def test_normalize_memory_type(value: str, expected: str) -> None:
    assert normalize_memory_type(value) == expected


@pytest.mark.parametrize("value", ["Foo", "", "   ", "MetaPattern", "decisions", None, 3])
def test_normalize_memory_type_rejects_unknown(value: object) -> None:
    with pytest.raises(ValidationError) as excinfo:
        normalize_memory_type(value)  # type: ignore[arg-type]
    message = excinfo.value.message
    assert all(name in message for name in MEMORY_TYPES)


@pytest.mark.parametrize(
    ("content", "expected_type"),
    [
        ("We decided to use PostgreSQL for the main store", "Decision"),
        ("Chose postgres over mongodb", "Decision"),
        ("I usually run the linter before pushing", "Pattern"),
        ("I prefer tabs to spaces", "Preference"),
        ("Always use black for Python files", "Preference"),
        ("Wrote the changelog in a terse style", "Style"),
        ("Responded to the reviewer politely", "Style"),
        ("I always review pull requests first thing", "Habit"),
        ("Runs the backup script daily", "Habit"),
        ("Realized the cache key was missing the tenant id", "Insight"),
        ("Figured out why the build is flaky", "Insight"),
        ("During the outage the API returned 502s", "Context"),
        ("While working on the importer the disk filled up", "Context"),
    ],
)
def test_classify_single_pattern(content: str, expected_type: str) -> None:
    assert classify(content) == (expected_type, 0.6)


def test_classify_first_type_in_order_wins() -> None:
    # Matches Decision ("decided to") and Preference ("always use").
    assert classify("Decided to always use ruff") == ("Decision", 0.6)
    # Matches Pattern ("usually") and Context ("during").
    assert classify("During reviews I usually skim tests") == ("Pattern", 0.6)


def test_classify_multiple_matches_raise_confidence() -> None:
    assert classify("I prefer vim rather than emacs") == ("Preference", 0.8)
    # "favor" is also a substring of "favorite": three patterns match.
    assert classify("I prefer vim; it is my favorite editor") == ("Preference", 0.9)
    assert classify("Decided to go with redis, chose redis over memcached, opted for the managed plan") == (
        "Decision",
        0.9,
    )


def test_classify_confidence_is_capped() -> None:
    content = "decided to migrate; going with k8s; picked helm; opted for argo; selected flux"
    assert classify(content) == ("Decision", 0.95)


def test_classify_is_case_insensitive() -> None:
    assert classify("DECIDED TO SHIP ON FRIDAY") == ("Decision", 0.6)


def test_classify_substring_patterns_like_automem() -> None:
    assert classify("Whenever the deploy fails, page ops") == ("Context", 0.6)


@pytest.mark.parametrize("content", ["PostgreSQL 16 supports logical replication", "", "ok"])
def test_classify_fallback_is_canonical_context(content: str) -> None:
    assert classify(content) == ("Context", 0.3)
