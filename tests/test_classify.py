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


# Ordinary personal notes (issue 35: "Allergic to penicillin ..." was a Habit, and 11 of 12 such
# notes fell back to Context 0.30). Each gets a plausible type from a rule, not the fallback.
ORDINARY_NOTES = [
    ("Allergic to penicillin — always mention it to a new doctor", "Context"),
    ("I love spicy Thai food but can't stand coriander", "Preference"),
    ("My favourite coffee is a flat white with oat milk", "Preference"),
    ("I'd rather have meetings in the morning", "Preference"),
    ("I\u2019d rather not drive at night", "Preference"),
    ("Don't like being called before 9am", "Preference"),
    ("Prefers window seats on long flights", "Preference"),
    ("I go swimming every Tuesday and Thursday morning", "Habit"),
    ("Take vitamin D every morning in winter", "Habit"),
    ("Jogging 5 km three times a week", "Habit"),
    ("Water the plants on Sundays", "Habit"),
    ("She almost always orders the soup", "Habit"),
    ("Decided to sell the car and cycle to work", "Decision"),
    ("Going with the blue paint for the kitchen", "Decision"),
    ("Settled on the smaller flat near the station", "Decision"),
    ("Turns out the boiler only needs its pressure topped up, not a repair", "Insight"),
    ("Noticed I sleep much better if I skip coffee after noon", "Insight"),
    ("Lesson learned: always check the oven is off before leaving", "Insight"),
    ("I tend to overspend on the first weekend after payday", "Pattern"),
    ("Sam's birthday is on 14 June", "Context"),
    ("My dentist is Dr. Patel at the Riverside clinic", "Context"),
    ("My physio is Dr. Lee at the sports clinic", "Context"),
    ("Anna is vegetarian and doesn't eat fish either", "Context"),
    ("Passport expires in March 2027", "Context"),
    ("Tom works at the hospital as a nurse", "Context"),
]


@pytest.mark.parametrize(("content", "expected_type"), ORDINARY_NOTES)
def test_ordinary_notes_get_a_plausible_type(content: str, expected_type: str) -> None:
    memory_type, confidence = classify(content)
    assert memory_type == expected_type
    assert confidence >= 0.6  # a rule matched: not the 0.3 fallback


def test_always_needs_someone_who_always_does_it() -> None:
    # an instruction with "always" is no habit (AutoMem's bare \balways\b said Habit)
    assert classify("Always lock the back door") == ("Context", 0.3)
    assert classify("We always lock the back door")[0] == "Habit"


# Issue 45: "Decision: ..." and its replacement were typed Context (0.30), and a captured
# question was typed Preference.
@pytest.mark.parametrize(
    ("content", "expected_type"),
    [
        ("Decision: move billing to CockroachDB", "Decision"),
        ("decision - keep the nightly backup on the NAS", "Decision"),
        ("  Decisions: postgres for billing; redis for sessions", "Decision"),
        ("Preference: window seats on long flights", "Preference"),
        ("Insight \u2013 the cache key missed the tenant", "Insight"),
    ],
)
def test_a_leading_type_label_gives_that_type(content: str, expected_type: str) -> None:
    assert classify(content) == (expected_type, 0.9)


def test_a_type_word_that_is_no_label_reads_as_text() -> None:
    assert classify("Decisionmaking is slow here") == ("Context", 0.3)
    assert classify("The decision was hard") == ("Context", 0.3)


@pytest.mark.parametrize(
    "question",
    [
        "Should we use Postgres rather than SQLite?",
        "Do you prefer tabs or spaces?",
        "Which editor is your favourite??",
        "Are we going with the blue paint?",
    ],
)
def test_a_question_is_no_preference_or_decision(question: str) -> None:
    assert classify(question) == ("Context", 0.3)


def test_statements_beside_a_question_still_count() -> None:
    assert classify("I prefer tabs. What do you prefer?") == ("Preference", 0.6)
    assert classify("What did we settle? We decided to use Redis.") == ("Decision", 0.6)


def test_a_long_text_with_one_question_mark_classifies() -> None:
    # one "?" then a megabyte without sentence ends: the question filter stays linear
    assert classify("why?" + " word" * 200_000 + " we decided to ship")[0] == "Decision"


def test_a_replacement_keeps_the_type_the_rules_cannot_read(tmp_path) -> None:
    from localmem import MemoryStore

    store = MemoryStore(tmp_path / "m.db", embedder="hash")
    try:
        old = store.store("Decision: use Postgres for billing")
        assert store.get(old)["type"] == "Decision"
        new = store.supersede(old, "We moved billing to CockroachDB")["memory_id"]
        assert (store.get(new)["type"], store.get(new)["confidence"]) == ("Decision", 0.9)
        # what the rules read in the new content wins; a given type wins over both
        newer = store.supersede(new, "Realized CockroachDB costs too much")["memory_id"]
        assert store.get(newer)["type"] == "Insight"
        typed = store.supersede(newer, "Billing is on Postgres again", type="Context")["memory_id"]
        assert store.get(typed)["type"] == "Context"
        # content that is no text is refused by the store's validation, naming the field
        with pytest.raises(ValidationError, match="content"):
            store.supersede(typed, 12345)  # type: ignore[arg-type]
    finally:
        store.close()
