"""auto_decompose: supplementary queries built from a query's names and topics.

Implements automem-behaviour.md §1.11 and "Auto Query Decomposition" in
automem-recall.md. Capitalised names (at most two) are searched alone and
with up to three topic keywords; without names, the first three topic
keywords are searched alone. The original query is run as well, by the
caller; :func:`decompose_query` returns only the supplementary queries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "BROAD_TOPICS",
    "ENTITY_STOPWORDS",
    "TOPIC_SKIP_WORDS",
    "decompose_query",
    "extract_query_entities",
    "extract_topic_keywords",
]

# Capitalised words that are not names: question words and auxiliaries,
# answer/reasoning words, months, weekdays and nationality adjectives.
# Compared case-sensitively against the punctuation-stripped word.
ENTITY_STOPWORDS: frozenset[str] = frozenset({
    "What", "Would", "Could", "Does", "Did", "How", "Why", "When", "Where", "Which", "Who",
    "Whose", "Will", "Can", "Should", "Has", "Have", "Had", "Is", "Are", "Was", "Were", "Do",
    "Been", "Being", "The", "Answer", "Yes", "No", "Likely", "Based", "According", "Since",
    "Because",
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    "National", "American", "European", "Asian", "African",
})

# Filler and question words dropped from topic keywords. Topics are words of
# four or more letters, so shorter fillers ("the", "is", "job"...) can never
# be topics and are not listed.
TOPIC_SKIP_WORDS: frozenset[str] = frozenset({
    "would", "could", "should", "will", "might", "does", "have", "were", "been", "being",
    "with", "about", "what", "which", "whom", "whose", "where", "when", "this", "that",
    "these", "those", "they", "them", "their", "likely", "probably", "possibly",
    "considered", "pursue", "want", "like", "prefer", "interested", "still", "ever",
    "more", "most", "some", "only",
})

# A topic from this set adds "<name> interests goals plans". ("job" has three
# letters, so as in AutoMem it can never actually be a topic.)
BROAD_TOPICS: frozenset[str] = frozenset({"career", "job", "work"})
BROAD_SUFFIX = "interests goals plans"

MAX_ENTITIES = 2
MAX_TOPICS = 5
TOPICS_PER_QUERY = 3

_WORD = re.compile(r"\S+")
_NON_WORD = re.compile(r"[^\w]")
_POSSESSIVE = re.compile(r"\b([A-Z][a-z]+)['\u2019]s\b")
_TOPIC = re.compile(r"\b[a-z]{4,}\b")
_SENTENCE_END = ".?!"


def _is_name_shaped(word: str) -> bool:
    """A capital letter followed only by lowercase letters (``Caroline``, not ``OAuth``)."""
    return len(word) > 1 and word[0].isupper() and word[1:].islower()


def extract_query_entities(query: str) -> list[str]:
    """Capitalised names in ``query``, unique, in order of first appearance.

    A word (punctuation stripped, ≥ 2 chars) counts when it is name-shaped,
    not an :data:`ENTITY_STOPWORDS` entry, not the first word and not right
    after a word ending in ``.``, ``?`` or ``!``. Words containing ``'s`` are
    left to the possessive rule, which finds ``Name's`` / ``Name’s`` anywhere,
    the first word included. AutoMem returns these as an unordered set; this
    returns them in query order so results are deterministic.
    """
    if not query:
        return []
    found: list[tuple[int, str]] = []
    words = list(_WORD.finditer(query))
    for index, match in enumerate(words):
        word = match.group()
        clean = _NON_WORD.sub("", word)
        if len(clean) < 2 or clean in ENTITY_STOPWORDS:
            continue
        if "'s" in word or "\u2019s" in word:
            continue
        if not _is_name_shaped(clean) or index == 0:
            continue
        if words[index - 1].group()[-1] in _SENTENCE_END:
            continue
        found.append((match.start(), clean))
    for match in _POSSESSIVE.finditer(query):
        if match.group(1) not in ENTITY_STOPWORDS:
            found.append((match.start(1), match.group(1)))
    found.sort(key=lambda item: item[0])
    return list(dict.fromkeys(name for _, name in found))


def extract_topic_keywords(query: str, exclude: Iterable[str] = ()) -> list[str]:
    """Up to five lowercase topic words of ≥ 4 ASCII letters, unique, in order.

    Drops :data:`TOPIC_SKIP_WORDS` and the (case-insensitive) ``exclude`` words,
    normally the query's entities.
    """
    if not query:
        return []
    excluded = {e.lower() for e in exclude}
    topics = (w for w in _TOPIC.findall(query.lower())
              if w not in TOPIC_SKIP_WORDS and w not in excluded)
    return list(dict.fromkeys(topics))[:MAX_TOPICS]


def decompose_query(query: str) -> list[str]:
    """The supplementary queries for ``auto_decompose`` (the original excluded).

    For each of the first two names E: ``E``, then ``E <topic>`` for the first
    three topics, then ``E interests goals plans`` if any topic is in
    :data:`BROAD_TOPICS`. Without names: the first three topics alone.
    """
    text = (query or "").strip()
    entities = extract_query_entities(text)
    topics = extract_topic_keywords(text, entities)
    if not entities:
        return topics[:TOPICS_PER_QUERY]
    broad = any(topic in BROAD_TOPICS for topic in topics)
    queries: list[str] = []
    for entity in entities[:MAX_ENTITIES]:
        queries.append(entity)
        queries.extend(f"{entity} {topic}" for topic in topics[:TOPICS_PER_QUERY])
        if broad:
            queries.append(f"{entity} {BROAD_SUFFIX}")
    return queries
