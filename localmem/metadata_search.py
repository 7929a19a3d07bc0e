"""The metadata sidecar: matching a text query against whitelisted metadata values.

Implements automem-behaviour.md §1.5 and the "Metadata Sidecar Search" section
of automem-recall.md. Only a fixed set of metadata fields is searchable; a
query admits a memory only on strong evidence (several value tokens, or one
long / exact token, or a field the query names explicitly), and the best
qualifying value gives the memory's ``metadata`` score in [0, 1].

The SQL side is a cheap prefilter (``lower(metadata) LIKE '%term%'`` for any of
:func:`prefilter_terms`); :func:`metadata_match_score` then decides in Python.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "FIELD_ALIASES",
    "FIELD_TOKENS",
    "METADATA_SEARCH_FIELDS",
    "QUERY_STOPWORDS",
    "SKIPPED_FIELDS",
    "field_is_requested",
    "has_strong_evidence",
    "metadata_match_score",
    "metadata_scan_limit",
    "metadata_slot_count",
    "metadata_values",
    "normalize_text",
    "prefilter_terms",
    "query_value_terms",
    "requested_fields",
]

METADATA_SEARCH_FIELDS: tuple[str, ...] = (
    "source", "source_agent", "source_agents", "repo", "project", "tool", "surface",
    "applies_to", "trigger", "provider", "model", "entities",
)

# Never searchable, even if someone adds them to the whitelist.
SKIPPED_FIELDS: frozenset[str] = frozenset({
    "original_content", "enrichment", "semantic_neighbors", "patterns_detected",
})

# Query words (already normalised) that signal a field. Multi-word aliases are
# matched as whole-word phrases, single words as tokens.
FIELD_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "source": ("source",),
    "source_agent": ("source agent", "source agents"),
    "source_agents": ("source agents", "source agent"),
    "repo": ("repo", "repository"),
    "project": ("project",),
    "tool": ("tool",),
    "surface": ("surface",),
    "applies_to": ("applies to", "apply to"),
    "trigger": ("trigger",),
    "provider": ("provider",),
    "model": ("model",),
    "entities": ("entity", "entities"),
})

QUERY_STOPWORDS: frozenset[str] = frozenset({
    "all", "any", "about", "by", "find", "for", "from", "in", "me", "memory", "memories",
    "of", "on", "please", "show", "that", "the", "to", "with",
})

# Words naming a field are never value terms themselves.
FIELD_TOKENS: frozenset[str] = frozenset({
    "source", "agent", "agents", "repo", "repository", "project", "tool", "surface",
    "applies", "apply", "trigger", "provider", "model", "entity", "entities", "metadata",
})

SOURCE_AGENT_FIELDS: frozenset[str] = frozenset({"source_agent", "source_agents"})
MAX_VALUE_CHARS = 96
MAX_LIST_ITEMS = 12
MIN_TOKEN_CHARS = 2
MIN_VALUE_TERM_CHARS = 3
PREFILTER_MAX_TERMS = 12

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _ascii_char(char: str) -> str:
    """ASCII as is; non-ASCII letters, marks and digits dropped; other non-ASCII a space."""
    if char.isascii():
        return char
    return "" if unicodedata.category(char)[0] in "LMN" else " "


def normalize_text(s: Any) -> str:
    """NFKD, ASCII only, every non-alphanumeric run to one space, lowercased, trimmed.

    Accents vanish (``Café`` → ``cafe``) and other non-ASCII letters are dropped
    as in AutoMem, but non-ASCII punctuation and symbols separate words
    (``Café—Déjà`` → ``cafe deja``) where AutoMem would glue them (``cafedeja``).
    """
    text = str(s)
    if not text.isascii():  # NFKD leaves ASCII text as it is
        text = "".join(_ascii_char(c) for c in unicodedata.normalize("NFKD", text))
    return _NON_ALNUM.sub(" ", text).strip().lower()


def _tokens(s: Any) -> list[str]:
    """Unique tokens (≥ 2 chars) of the normalised text, in order."""
    return list(dict.fromkeys(t for t in normalize_text(s).split() if len(t) >= MIN_TOKEN_CHARS))


def requested_fields(query: str) -> set[str]:
    """The whitelisted fields the query names (via :data:`FIELD_ALIASES`).

    "source agent(s)" names both ``source_agent`` and ``source_agents`` and then
    the bare word "source" does not also name ``source``.
    """
    normalized = normalize_text(query)
    if not normalized:
        return set()
    padded = f" {normalized} "
    words = set(normalized.split())
    fields: set[str] = set()
    for field, aliases in FIELD_ALIASES.items():
        if any(" " in a and f" {a} " in padded for a in aliases):
            fields.add(field)
    for field, aliases in FIELD_ALIASES.items():
        if field in fields:
            continue
        if any(" " not in a and a in words for a in aliases):
            if field == "source" and fields & SOURCE_AGENT_FIELDS:
                continue
            fields.add(field)
    return fields


def query_value_terms(query: str) -> tuple[list[str], set[str]]:
    """The query's value terms and the fields it names.

    Value terms are the normalised tokens of ≥ 3 chars that are neither
    sidecar stopwords nor field words, unique, in query order.
    """
    terms = [t for t in _tokens(query)
             if len(t) >= MIN_VALUE_TERM_CHARS and t not in QUERY_STOPWORDS and t not in FIELD_TOKENS]
    return terms, requested_fields(query)


def prefilter_terms(query: str) -> list[str]:
    """The first 12 value terms, for an any-of ``lower(metadata) LIKE '%term%'`` prefilter.

    Terms are ``[a-z0-9]+`` so they need no LIKE escaping. (AutoMem also lets
    2-char tokens take prefilter slots; they can never be a match's only hit,
    so they are left out here.)
    """
    return query_value_terms(query)[0][:PREFILTER_MAX_TERMS]


def metadata_scan_limit(limit: int) -> int:
    """How many prefiltered rows to score: ``min(max(limit·25, 200), 1000)``."""
    return min(max(limit * 25, 200), 1000)


def metadata_slot_count(limit: int) -> int:
    """How many new candidates the sidecar may add: ``max(1, min(limit, 10))``."""
    return max(1, min(limit, 10))


def _scalar_values(value: Any) -> Iterator[str]:
    """Searchable strings of one metadata value.

    Non-empty strings of ≤ 96 chars (stripped), numbers (not booleans), and
    lists of ≤ 12 items, recursively; anything else (dicts, long lists) is skipped.
    """
    if isinstance(value, str):
        text = value.strip()
        if text and len(text) <= MAX_VALUE_CHARS:
            yield text
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, (list, tuple)) and len(value) <= MAX_LIST_ITEMS:
        for item in value:
            yield from _scalar_values(item)


def _entity_values(entities: Any) -> Iterator[tuple[str, str]]:
    """``entities.<category>`` values, never the ``people`` category."""
    if not isinstance(entities, Mapping):
        return
    for category, values in entities.items():
        name = str(category).strip().lower()
        if not name or name == "people" or isinstance(values, Mapping):
            continue
        for item in _scalar_values(values):
            yield f"entities.{name}", item


def metadata_values(metadata: Mapping[str, Any], requested_fields: set[str]) -> list[tuple[str, str]]:
    """(field, value) pairs of the whitelisted fields, in whitelist order.

    Entities are only included when the query names the entities field, as
    ``entities.<category>`` pairs (a category holding one string counts too).
    """
    if not isinstance(metadata, Mapping):
        return []
    pairs: list[tuple[str, str]] = []
    for field in METADATA_SEARCH_FIELDS:
        if field in SKIPPED_FIELDS or field not in metadata:
            continue
        raw = metadata[field]
        if field == "entities":
            if "entities" in requested_fields:
                pairs.extend(_entity_values(raw))
        elif not isinstance(raw, Mapping):
            pairs.extend((field, item) for item in _scalar_values(raw))
    return pairs


def field_is_requested(field: str, requested: set[str]) -> bool:
    """Whether ``field`` counts as asked for (every field does when none is named).

    ``source_agent`` and ``source_agents`` stand for each other; ``entities.x``
    counts as ``entities``.
    """
    if not requested:
        return True
    base = field.split(".", 1)[0]
    if base in SOURCE_AGENT_FIELDS:
        return bool(SOURCE_AGENT_FIELDS & requested)
    return base in requested


def has_strong_evidence(*, hits: set[str], value_tokens: set[str], query_value_count: int,
                        exact: bool, explicit_field: bool) -> bool:
    """Whether a value's hits are strong enough to admit the memory (§1.5).

    ``explicit_field``: the query names fields and this value's field is one.
    Strong means two or more hits on a multi-token value, or exactly one hit
    that is (explicit field, exact value, ≥ 3 chars), or (≥ 5 chars, explicit
    field), or (≥ 5 chars, exact value, query has ≤ 3 value terms).
    """
    if len(value_tokens) > 1 and len(hits) >= 2:
        return True
    if len(hits) != 1:
        return False
    hit_len = len(next(iter(hits)))
    if explicit_field and exact and hit_len >= 3:
        return True
    if hit_len < 5:
        return False
    return explicit_field or (exact and query_value_count <= 3)


def _value_score(hits: int, value_tokens: int, query_terms: int, exact: bool,
                 explicit_field: bool, other_field_named: bool) -> float:
    """``min(1, 0.15 + 0.45·h/v + 0.20·h/q + 0.15·exact + 0.20·explicit)``, ×0.6 off-field."""
    score = min(1.0, 0.15 + 0.45 * hits / value_tokens + 0.20 * hits / query_terms
                + (0.15 if exact else 0.0) + (0.20 if explicit_field else 0.0))
    return score * 0.6 if other_field_named else score


def _as_mapping(metadata: Any) -> Mapping[str, Any]:
    """Metadata as a mapping: a dict as is, a JSON object string decoded, else empty."""
    if isinstance(metadata, Mapping):
        return metadata
    if isinstance(metadata, str) and metadata.strip():
        try:
            decoded = json.loads(metadata)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def metadata_match_score(query: str, metadata: Mapping[str, Any] | str | None) -> float:
    """The sidecar score of one memory's metadata for ``query``; 0.0 when nothing qualifies.

    Per value: hits = query value terms among the value's tokens (≥ 2 chars);
    exact = the whole normalised value occurs in the normalised query on word
    boundaries. Skipped: values without hits; a ``repo`` value, when the query
    names the repo field, that is not exact and leaves some query value term
    uncovered; values of an unnamed field with < 2 hits when the query names
    fields; values without strong evidence. The best remaining score wins.
    """
    terms, requested = query_value_terms(query or "")
    if not terms:
        return 0.0
    query_terms = set(terms)
    padded_query = f" {normalize_text(query)} "
    best = 0.0
    for field, value in metadata_values(_as_mapping(metadata), requested):
        value_text = normalize_text(value)
        value_tokens = set(_tokens(value_text))
        hits = query_terms & value_tokens
        if not hits:
            continue
        exact = f" {value_text} " in padded_query
        requested_here = field_is_requested(field, requested)
        explicit = bool(requested) and requested_here
        if field == "repo" and "repo" in requested and not exact and query_terms - value_tokens:
            continue
        if requested and not requested_here and len(hits) < 2:
            continue
        if not has_strong_evidence(hits=hits, value_tokens=value_tokens,
                                   query_value_count=len(query_terms), exact=exact,
                                   explicit_field=explicit):
            continue
        best = max(best, _value_score(len(hits), len(value_tokens), len(query_terms), exact,
                                      explicit, bool(requested) and not requested_here))
    return best


def metadata_index_terms(metadata: Mapping[str, Any]) -> list[str]:
    """Every value token (≥ 3 chars) of the whitelisted fields, entities included.

    These rows of ``memory_metadata_terms`` let the sidecar find candidates by
    index lookups instead of scanning metadata text.
    """
    everything = set(METADATA_SEARCH_FIELDS)
    terms: dict[str, None] = {}
    for _field, value in metadata_values(metadata, everything):
        for token in _tokens(value):
            if len(token) >= 3:
                terms.setdefault(token, None)
    return list(terms)
