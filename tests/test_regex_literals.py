"""required_substrings: every match of a pattern contains one of the strings it names, and the
classifier that skips patterns by them types every text as searching every pattern does."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localmem import classify
from localmem.regex_literals import required_substrings

PATTERNS = [
    r"decided (?:on|against)\b", r"like.*better", r"\b(?:i|we)(?:'d| would) rather\b",
    r"\b(?:every|each) (?:morning|day)\b", r"\bturn(?:s|ed) out\b", r"(?:ab)+c", r"a(?:bc)?d",
    r"x|yz", r"x|y?", r"[ab]c", r"a\d+b", r"(ab|cd)\1", r"(?<!q)ab", r"ab(?=c)", r"a.b",
] + [p.pattern for _, rules in classify._RULES for p, _ in rules]
ALPHABET = "abcdxyqeiwy'ndlorthmgvsu \n0123456789"


def test_named_substrings_of_known_patterns():
    assert required_substrings(re.compile(r"\bturn(?:s|ed) out\b")) == {"turn"}
    assert required_substrings(re.compile(r"\b(?:can't|cannot|can not) stand\b")) == {" stand"}
    assert required_substrings(re.compile(r"x|yz")) == {"x", "yz"}
    assert required_substrings(re.compile(r"(?:ab)+c")) == {"ab"}


@pytest.mark.parametrize("pattern", [r"x|y?", r"a?", r"[ab]+", r".*", r"\d+"])
def test_patterns_that_need_no_literal_have_no_test(pattern):
    assert required_substrings(re.compile(pattern)) is None


def test_a_pattern_matching_other_cases_has_no_test():
    assert required_substrings(re.compile("abc", re.IGNORECASE)) is None
    assert required_substrings(re.compile("(?i:abc)d")) == {"d"}
    assert required_substrings(re.compile("(?i:abc)")) is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.sampled_from(PATTERNS))
def test_every_match_contains_a_named_substring(text, pattern):
    compiled = re.compile(pattern)
    required = required_substrings(compiled)
    if required is not None and compiled.search(text):
        assert any(part in text for part in required)


def _classify_searching_every_pattern(content: str) -> tuple[str, float]:
    """The classifier's rules without the substring test (its answer must not change)."""
    text = (content or "").lower().replace("\u2019", "'")
    label = classify._LABEL.match(text)
    if label is not None:
        return label.group(1).capitalize(), classify.LABEL_CONFIDENCE
    if "?" in text:
        text = " ".join(p for p in classify._AFTER_SENTENCE.split(text) if not p.rstrip().endswith("?"))
    for memory_type, rules in classify._RULES:
        matches = sum(1 for pattern, _ in rules if pattern.search(text))
        if matches:
            return memory_type, 0.6 if matches == 1 else round(min(0.95, 0.6 + 0.1 * matches), 4)
    return classify.DEFAULT_TYPE, classify.FALLBACK_CONFIDENCE


def test_the_classifier_types_texts_as_searching_every_pattern_does():
    words = ("i we she they always use like love rather than don't can't stand every each morning "
             "once twice 3 times a day on mondays weekends my her our doctor lives in works at expires "
             "is due phone number email vegan turned out lesson learnt noticed found out decided on "
             "against chose x over wrote style using tone usually picked prefer ? . ! \u2019 "
             "favourite decision: preference - during when birthday allergic appointment").split()
    rng = random.Random(7)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 14))) for _ in range(4000)]
    texts += ["I'd rather walk", "She almost always uses vim", "We switched to Postgres.",
              "Turns out the cache was cold", "Is the report due?", "My physio lives in Leeds",
              "Decision: move billing", "", "I\u2019d rather not", "every Sunday", "twice a week"]
    types = [classify.classify(t) for t in texts]
    assert types == [_classify_searching_every_pattern(t) for t in texts]
    assert len({t for t, _ in types}) == len(classify.MEMORY_TYPES)  # every type is exercised
