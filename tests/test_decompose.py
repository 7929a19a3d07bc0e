"""auto_decompose (automem-behaviour.md §1.11, automem-recall.md "Auto Query Decomposition")."""

from __future__ import annotations

import pytest

from localmem.recall.decompose import (
    ENTITY_STOPWORDS,
    TOPIC_SKIP_WORDS,
    decompose_query,
    extract_query_entities,
    extract_topic_keywords,
)


def test_word_lists() -> None:
    assert {"What", "Would", "May", "Sunday", "American", "Because"} <= ENTITY_STOPWORDS
    assert {"would", "pursue", "want", "like", "prefer", "interested", "still", "ever",
            "more", "most", "some", "only"} <= TOPIC_SKIP_WORDS
    # topics have ≥ 4 letters, so shorter skip words would be dead entries
    assert min(len(w) for w in TOPIC_SKIP_WORDS) >= 4


# --- entities ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Would Caroline's sister pursue a career in writing?", ["Caroline"]),
        ("Would Caroline\u2019s sister pursue a career in writing?", ["Caroline"]),
        ("Caroline's plans for June", ["Caroline"]),  # possessive counts even as first word
        ("React OAuth authentication patterns", []),  # first word; "OAuth" is not name-shaped
        ("Did Melanie meet Caroline and Jon in Paris?", ["Melanie", "Caroline", "Jon", "Paris"]),
        ("Did Anna's brother visit Bob", ["Anna", "Bob"]),  # order of first appearance
        ("Is Jon's dog friends with Jon", ["Jon"]),
        ("I met Anna. Bob left! Carl stayed", ["Anna"]),  # no names right after . ! ?
        ("Tell me about Monday and May with American friends", []),
        ("What is Monday's plan", []),                # stopword possessive
        ("ask NASA and McDonald and iPhone people", []),
        ("what did (Zoë) say, and Émile?", ["Zoë", "Émile"]),  # punctuation stripped, Unicode case
        ("", []),
    ],
)
def test_extract_query_entities(query: str, expected: list[str]) -> None:
    assert extract_query_entities(query) == expected


# --- topics ------------------------------------------------------------------


def test_topics_skip_exclude_dedupe_and_limit() -> None:
    query = "Would Caroline still like hiking, Hiking and kayaking more than swimming or climbing trips"
    # would/still/like/more skipped, caroline excluded, hiking once, "than" is not a skip word,
    # first five only ("trips" is sixth)
    assert extract_topic_keywords(query, ["Caroline"]) == [
        "hiking", "kayaking", "than", "swimming", "climbing"]


def test_topics_are_lowercase_ascii_words_of_four_letters() -> None:
    assert extract_topic_keywords("React OAuth authentication patterns", []) == [
        "react", "oauth", "authentication", "patterns"]
    assert extract_topic_keywords("go to the job fair in café town", []) == ["fair", "town"]
    assert extract_topic_keywords("", ["x"]) == []


# --- decompose_query ----------------------------------------------------------


def test_spec_example_without_names() -> None:
    assert decompose_query("React OAuth authentication patterns") == [
        "react", "oauth", "authentication"]


def test_spec_example_with_a_name_and_career() -> None:
    # topics: sister, career, writing (would/pursue skipped, caroline excluded)
    expected = ["Caroline", "Caroline sister", "Caroline career", "Caroline writing",
                "Caroline interests goals plans"]
    assert decompose_query("Would Caroline's sister pursue a career in writing?") == expected
    assert decompose_query("Would Caroline\u2019s sister pursue a career in writing?") == expected


def test_at_most_two_names_each_with_three_topics() -> None:
    query = "Did Melanie and Caroline and Jon discuss work travel plans?"
    # names Melanie, Caroline, Jon (only the first two used); topics discuss, work, travel, plans
    assert decompose_query(query) == [
        "Melanie", "Melanie discuss", "Melanie work", "Melanie travel",
        "Melanie interests goals plans",
        "Caroline", "Caroline discuss", "Caroline work", "Caroline travel",
        "Caroline interests goals plans",
    ]


def test_broad_topic_anywhere_in_the_five_topics() -> None:
    # topics: discuss, hiking, travel, plans, career — career is fifth, still broad
    assert decompose_query("Did Anna discuss hiking travel plans career") == [
        "Anna", "Anna discuss", "Anna hiking", "Anna travel", "Anna interests goals plans"]


def test_job_is_too_short_to_be_a_topic() -> None:
    assert decompose_query("Would Anna take the job offer") == ["Anna", "Anna take", "Anna offer"]


def test_name_without_topics_and_nothing_at_all() -> None:
    assert decompose_query("Who is Anna?") == ["Anna"]
    assert decompose_query("is it ok") == []
    assert decompose_query("") == []
    assert decompose_query("   ") == []
