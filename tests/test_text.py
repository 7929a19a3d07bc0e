from __future__ import annotations

import pytest

from localmem.text import (
    SEARCH_STOPWORDS,
    content_tokens,
    extract_keywords,
    fingerprint,
    generate_summary,
    keyword_share,
    substring_match_score,
)

CONTENT = "Chose PostgreSQL over MongoDB for the primary database."
TAGS = ["project-alpha", "database"]


# --- keywords --------------------------------------------------------------


def test_stopword_list_is_exactly_automems() -> None:
    # The spec says "exactly 26" but lists (and AutoMem ships) these 25.
    assert SEARCH_STOPWORDS == frozenset(
        "the and for with that this from into using have will your about after"
        " before when then than also just very more less over under".split()
    )
    assert not {"what", "how", "is", "my"} & SEARCH_STOPWORDS
    assert extract_keywords(" ".join(sorted(SEARCH_STOPWORDS))) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql database decisions", ["postgresql", "database", "decisions"]),
        ("The API and the Database", ["api", "database"]),
        ("what is my plan", ["what", "plan"]),  # "is"/"my" die by length only
        ("a an of go to be db", []),
        ("Redis redis REDIS cache redis", ["redis", "cache"]),
        ("hub-developer api_v2 --foo-- __bar__", ["hub-developer", "api_v2", "foo", "bar"]),
        ("-ab- _x_ a-b", ["a-b"]),
        ("postgres, mysql; sqlite. (duckdb)", ["postgres", "mysql", "sqlite", "duckdb"]),
        ("caf\u00e9 na\u00efve", ["caf"]),  # only ASCII word characters count
        ("", []),
    ],
)
def test_extract_keywords(text: str, expected: list[str]) -> None:
    assert extract_keywords(text) == expected


def test_content_tokens() -> None:
    tokens = content_tokens("Hello, World! hub-developer api_v2 R2D2")
    assert tokens == {"hello", "world", "hub", "developer", "r2d2"}


def test_keyword_share_worked_example() -> None:
    keywords = extract_keywords("postgresql database decisions")
    assert keyword_share(keywords, CONTENT) == pytest.approx(2 / 3)


def test_keyword_share_is_whole_token_not_substring() -> None:
    assert keyword_share(["data"], "the database") == 0.0
    assert keyword_share(["data"], "raw data") == 1.0


def test_keyword_share_hyphenated_keywords_never_match() -> None:
    assert keyword_share(["hub-developer", "api_v2"], "hub-developer api_v2") == 0.0


def test_keyword_share_without_keywords_is_zero() -> None:
    assert keyword_share([], CONTENT) == 0.0


# --- substring (graph keyword) score ---------------------------------------


def test_substring_score_worked_example() -> None:
    # postgresql: content 2; database: content 2 + tag 1; decisions: 0;
    # phrase absent. 5 of 3·3 + 3 = 12 points.
    assert substring_match_score("postgresql database decisions", CONTENT, TAGS) == pytest.approx(
        5 / 12
    )


def test_substring_score_counts_phrase() -> None:
    # primary 2, database 2+1, phrase "primary database" in content 2 → 7 / 9.
    assert substring_match_score("Primary Database", CONTENT, TAGS) == pytest.approx(7 / 9)


def test_substring_score_is_substring_and_case_insensitive() -> None:
    # "data" is inside "database" in the content and in the tag: 3 + phrase 3.
    assert substring_match_score("DATA", CONTENT, TAGS) == 1.0
    assert substring_match_score("mongo", CONTENT, []) == pytest.approx(4 / 6)


def test_substring_score_caps_at_one() -> None:
    assert substring_match_score("database", "database", ["database"]) == 1.0


def test_substring_score_phrase_only_branch() -> None:
    # "the" is a stopword, so only the phrase scores, out of 3.
    assert substring_match_score("the", "the cat", []) == pytest.approx(2 / 3)
    assert substring_match_score("the", "the cat", ["theory"]) == 1.0


@pytest.mark.parametrize("query", ["", "  ", "ab", "*"])
def test_substring_score_without_terms_is_zero(query: str) -> None:
    assert substring_match_score(query, CONTENT, TAGS) == 0.0


def test_substring_score_no_match() -> None:
    assert substring_match_score("kubernetes helm", CONTENT, TAGS) == 0.0


# --- fingerprint -----------------------------------------------------------


def test_fingerprint_collapses_markdown_and_punctuation_variants() -> None:
    variants = [
        "Use PostgreSQL for data.",
        "**Use** `PostgreSQL` -- for #data!",
        "> use   postgresql,\nfor data",
        "  USE POSTGRESQL FOR DATA  ",
        "use_postgresql ~for~ data?",
    ]
    assert {fingerprint(v) for v in variants} == {"use postgresql for data"}


def test_fingerprint_drops_non_ascii() -> None:
    assert fingerprint("Caf\u00e9 \u2014 na\u00efve \U0001f600 ok") == "caf nave ok"


def test_fingerprint_distinguishes_different_content() -> None:
    assert fingerprint("use postgresql") != fingerprint("use mysql")


def test_fingerprint_is_truncated_to_320_chars() -> None:
    fp = fingerprint("word " * 200)
    assert len(fp) == 320
    assert fp.startswith("word word")
    assert fingerprint("") == ""


# --- summary ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("First sentence. Second one.", "First sentence."),
        ("Really? Yes.", "Really?"),
        ("Wow!  Next", "Wow!"),
        ("No terminal punctuation here", "No terminal punctuation here"),
        ("  padded sentence.  More.", "padded sentence."),
        ("version 1.2 is out", "version 1.2 is out"),
        ("My physio is Dr. Patel at St. Mary's. Tuesdays.", "My physio is Dr. Patel at St. Mary's."),
        ("Ask J. Smith, e.g. about the lease. Then sign.", "Ask J. Smith, e.g. about the lease."),
        ("Call me. Dr. Who can wait.", "Call me."),
        ("", ""),
    ],
)
def test_generate_summary_first_sentence(content: str, expected: str) -> None:
    assert generate_summary(content) == expected


def test_generate_summary_cuts_long_sentence_at_word_boundary() -> None:
    sentence = " ".join(f"word{i}" for i in range(100)) + ". Tail."
    summary = generate_summary(sentence)
    assert len(summary) <= 240
    assert sentence.startswith(summary)
    assert sentence[len(summary)] == " "
    assert summary.endswith(tuple("0123456789"))
    # Nothing is appended (no ellipsis).
    assert "\u2026" not in summary and not summary.endswith("...")


def test_generate_summary_space_exactly_at_limit() -> None:
    assert generate_summary("a" * 240 + " tail") == "a" * 240


def test_generate_summary_hard_cuts_a_single_huge_word() -> None:
    assert generate_summary("x" * 500) == "x" * 240


def _fingerprint_by_patterns(text: str) -> str:
    """The fingerprint as first written, one regex pass per rule (the reference)."""
    import re
    value = re.sub(r"[`*_#>~\-]", " ", (text or "").lower())
    value = value.encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s]", " ", value)
    return re.sub(r"\s+", " ", value).strip()[:320]


def test_fingerprint_equals_its_pattern_definition() -> None:
    import random
    rng = random.Random(15)
    alphabet = [chr(code) for code in range(0x0250)] + list("`*_#>~- \t\n\x0b\x0c\x1c\u00a0\u2028\u0130")
    samples = ["", "   ", "\u0130stanbul", "a\u00a0b", "x\x1cy", "tab\tand\x0bvt", "word " * 100]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(5000)]
    for text in samples:
        assert fingerprint(text) == _fingerprint_by_patterns(text), repr(text)
