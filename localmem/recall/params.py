"""Parsing and validating recall parameters (AutoMem's GET /recall rules).

The Python API and the HTTP route both come through here, so values may be
Python objects or query-string text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import Any, Mapping

from ..classify import MEMORY_TYPES, TYPE_ALIASES
from ..config import BOOLEAN_WORDS, Config, parse_bool
from ..errors import ValidationError
from ..tags import canonical_prefix_filter, parse_tags, prepare_tag_filters
from ..timeparse import TimeWindow, parse_timestamp, time_window
from ..validation import check_text, validate_embedding, validate_uuid
from .context import EXTENSION_LANGUAGE_MAP, LANGUAGE_ALIASES

SORT_MODES = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")
STATE_MODES = ("current", "history")
RECENCY_MODES = ("off", "on", "auto")
MAX_QUERY_CHARS = 10_000
MAX_LIST_ITEMS = 100
# One recall's work: every query of ``queries`` runs a whole search (embedding, keyword and
# vector channels), so their number and their text together are capped; 100 queries of
# 10,000 characters took 70 s and held the store for it.
MAX_RECALL_QUERIES = 10
MAX_RECALL_QUERY_TEXT = 10_000

ALIASES = {
    "order_by": "sort",
    "time": "time_query",
    "expand_associations": "expand_relations",
    "expand": "expand_relations",
    "entity_expansion": "expand_entities",
    "relation_expansion_limit": "expansion_limit",
    "lang": "language",
    "file_path": "active_path",
    "focus_path": "active_path",
}
PARAMETERS = frozenset({
    "query", "queries", "embedding", "limit", "sort", "tags", "exclude_tags", "tag_mode",
    "tag_match", "time_query", "start", "end", "context", "language", "active_path",
    "context_tags", "context_types", "priority_ids", "expand_relations", "expand_entities",
    "relation_limit", "expansion_limit", "expand_min_importance", "expand_min_strength",
    "expand_respect_tags", "state_mode", "current_only", "state_debug", "recency_bias",
    "scope_fallback", "min_score", "adaptive_floor", "auto_decompose", "per_query_limit", "now",
    "strict_time",
})


@dataclass
class RecallParams:
    query: str = ""
    queries: list[str] = field(default_factory=list)
    embedding: bytes | None = None
    limit: int = 5
    per_query_limit: int = 5
    sort: str = "score"
    tags: list[str] = field(default_factory=list)
    exclude_tags: list[str] = field(default_factory=list)
    tag_mode: str = "any"
    tag_match: str = "prefix"
    window_start: datetime | None = None
    window_end: datetime | None = None
    time: TimeWindow = field(default_factory=TimeWindow)  # what the window was made from
    strict_time: bool = False
    warnings: list[str] = field(default_factory=list)  # said in the response, never silent
    context: str = ""
    language: str | None = None
    active_path: str | None = None
    context_tags: list[str] = field(default_factory=list)
    context_types: list[str] = field(default_factory=list)
    priority_ids: list[str] = field(default_factory=list)
    expand_relations: bool = False
    expand_entities: bool = False
    relation_limit: int = 5
    expansion_limit: int = 25
    expand_min_importance: float | None = None
    expand_min_strength: float | None = None
    expand_respect_tags: bool = False
    state_mode: str = "current"
    state_debug: bool = False
    recency_bias: str = "off"
    scope_fallback: bool = False
    min_score: float = 0.0
    adaptive_floor: bool = True
    auto_decompose: bool = False
    now: datetime | None = None  # always set by parse_recall_params

    @property
    def has_window(self) -> bool:
        return self.window_start is not None or self.window_end is not None

    @property
    def current_only(self) -> bool:
        return self.state_mode == "current"


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"'{name}' must be a string")
    if len(value) > MAX_QUERY_CHARS:
        raise ValidationError(f"'{name}' must be at most {MAX_QUERY_CHARS} characters")
    return check_text(value, name).strip()


def split_multi(value: Any, name: str) -> list[str]:
    """Repeated values and comma-separated parts, empties dropped (AutoMem's _split_multi_value)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValidationError(f"'{name}' must be a string or a list of strings")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError(f"'{name}' must contain only strings")
        out.extend(part.strip() for part in check_text(item, name).split(",") if part.strip())
    if len(out) > MAX_LIST_ITEMS:
        raise ValidationError(f"'{name}' accepts at most {MAX_LIST_ITEMS} values")
    return out


def check_recall_work(queries: list[str]) -> None:
    """Refuse a recall whose queries would take more work than one request may (400 naming 'queries')."""
    if len(queries) > MAX_RECALL_QUERIES:
        raise ValidationError(f"'queries' accepts at most {MAX_RECALL_QUERIES} queries per recall (each runs a "
                              f"whole search), got {len(queries)}; send several recalls instead")
    total = sum(len(q) for q in queries)
    if total > MAX_RECALL_QUERY_TEXT:
        raise ValidationError(f"'queries' may hold at most {MAX_RECALL_QUERY_TEXT:,} characters in all per "
                              f"recall, got {total:,}")


def _read_tags(value: Any, name: str, warnings: list[str]) -> list[str]:
    """``tags``/``exclude_tags``: read as every tag input is (tags.parse_tags: commas, semicolons
    and spaces separate; a leading '#' goes), unlike AutoMem's one tag ``"a,b"``; changes are warned."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ValidationError(f"'{name}' must be a string or a list of strings")
    parsed = parse_tags([check_text(i, name) for i in items], name)
    if len(parsed.tags) > MAX_LIST_ITEMS:
        raise ValidationError(f"'{name}' accepts at most {MAX_LIST_ITEMS} values")
    warnings.extend(parsed.notes)
    return parsed.tags


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _int(value: Any, name: str, default: int, lo: int, hi: int, warnings: list[str]) -> int:
    """An integer from ``lo``; above ``hi`` it is capped, and the answer says so (AutoMem caps silently)."""
    if _blank(value):
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,18}\s*", value):
        number = int(value)
    if number is None:
        raise ValidationError(f"'{name}' must be an integer from {lo} to {hi}, got {value!r}")
    if number < lo:
        raise ValidationError(f"'{name}' must be at least {lo}, got {number}")
    if number > hi:
        warnings.append(f"'{name}' {number} is above the maximum {hi}; {hi} was used")
        return hi
    return number


def _unit_float(value: Any, name: str, default: float | None) -> float | None:
    """A number in [0, 1]."""
    if _blank(value):
        return default
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(f"'{name}' must be a number from 0 to 1, got {value!r}")
    return number


def _choice(value: Any, name: str, choices: tuple[str, ...], default: str) -> str:
    if _blank(value):
        return default
    text = str(value).strip().lower()
    if text not in choices:
        raise ValidationError(f"'{name}' must be one of {', '.join(choices)}; got {value!r}")
    return text


def _memory_id(value: str) -> str:
    """A priority id as ids are stored (lower case, hyphens), so ``A1B2…`` matches ``a1b2-…``."""
    try:
        return validate_uuid(value, "priority_ids")
    except ValidationError:
        raise ValidationError(f"'priority_ids' must hold memory ids; {value[:60]!r} is not one") from None


def _bool(value: Any, name: str, default: bool) -> bool:
    """AutoMem's yes/no words; anything else is an error, not the default."""
    if _blank(value):
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in BOOLEAN_WORDS:
        return parse_bool(text, default)
    raise ValidationError(f"'{name}' must be a boolean (true/false, yes/no, 1/0, on/off); got {value!r}")


def parse_recall_params(raw: Mapping[str, Any], config: Config, dimensions: int | None,
                        default_now: datetime) -> RecallParams:
    """Validate raw parameters into RecallParams; ValidationError (400) on bad input.

    ``default_now`` is the reference time when the caller gives no ``now``.
    """
    values: dict[str, Any] = {}
    given: dict[str, str] = {}  # the name each value came under (a parameter or its alias)
    for key, value in raw.items():
        name = ALIASES.get(key, key)
        if name not in PARAMETERS:
            raise ValidationError(f"Unknown recall parameter '{key}'")
        if value is None or name in values and values[name] is not None:
            if value is not None and values[name] != value:
                raise ValidationError(f"'{given[name]}' and '{key}' are one parameter, given two values "
                                      f"({values[name]!r} and {value!r}): give one")
            values.setdefault(name, value)
            continue
        values[name], given[name] = value, key

    p = RecallParams()
    now = values.get("now")
    p.now = parse_timestamp(now, field="now") if now is not None else default_now
    query = _text(values.get("query"), "query")
    p.query = "" if query == "*" else query
    p.queries = [q for q in split_multi(values.get("queries"), "queries") if q != "*"]
    for q in p.queries:
        _text(q, "queries")
    check_recall_work(p.queries)
    if p.query and p.queries:  # the spec runs the queries alone
        p.warnings.append("'query' was not searched: 'queries' was given, and only its queries run (as in "
                          "AutoMem); add the query to 'queries' to search it too")
    if values.get("embedding") is not None:
        if dimensions is None:
            raise ValidationError("This store has no vector index; 'embedding' cannot be used")
        p.embedding = validate_embedding(values["embedding"], dimensions)
    p.limit = _int(values.get("limit"), "limit", 5, 1, config.max_limit, p.warnings)
    p.per_query_limit = _int(values.get("per_query_limit"), "per_query_limit", p.limit, 1,
                             config.max_limit, p.warnings)
    p.tag_mode = _choice(values.get("tag_mode"), "tag_mode", ("any", "all"), "any")
    p.tag_match = _choice(values.get("tag_match"), "tag_match", ("prefix", "exact"), "prefix")
    tags = prepare_tag_filters(_read_tags(values.get("tags"), "tags", p.warnings))
    if p.tag_match == "prefix":
        tags = list(dict.fromkeys(t for t in (canonical_prefix_filter(t) for t in tags) if t))
    p.tags = tags
    excluded = prepare_tag_filters(_read_tags(values.get("exclude_tags"), "exclude_tags", p.warnings))
    p.exclude_tags = list(dict.fromkeys(t for t in (canonical_prefix_filter(t) for t in excluded) if t))
    ruled_out = [_excluded(canonical_prefix_filter(t), p.exclude_tags) for t in p.tags]
    if ruled_out and (all(ruled_out) or (p.tag_mode == "all" and any(ruled_out))):
        p.warnings.append(f"'exclude_tags' rule out {'every' if all(ruled_out) else 'one'} tag of 'tags' (a tag is "
                          f"excluded with the tags under it){' and tag_mode is all' if not all(ruled_out) else ''}: "
                          "nothing can match")
    for name, default in (("tag_mode", "any"), ("tag_match", "prefix")):
        if not p.tags and getattr(p, name) != default:
            p.warnings.append(f"'{name}' {getattr(p, name)} was not used: it applies to 'tags', and there are none"
                              + ("; exclude_tags always match whole tags and their prefixes" if p.exclude_tags
                                 else ""))
    time_query = values.get("time_query")
    if time_query is not None and not isinstance(time_query, str):
        raise ValidationError("'time_query' must be a string")
    if time_query is not None:
        check_text(time_query, "time_query")
    p.strict_time = _bool(values.get("strict_time"), "strict_time", False)
    if p.strict_time and _blank(time_query):
        p.warnings.append("'strict_time' was not used: it refuses a time_query that is not understood, and there "
                          "is no time_query")
    p.time = time_window(time_query, values.get("start"), values.get("end"), p.now)
    if p.time.warning is not None:
        if p.strict_time:
            raise ValidationError(f"Invalid time_query: {p.time.error} (strict_time)")
        p.warnings.append(p.time.warning)
    p.warnings.extend(p.time.notes)
    if p.time.expression is not None and p.time.warning is None:
        p.warnings.extend(_replaced_bounds(time_query, values.get("start"), values.get("end"), p.now))
    p.window_start, p.window_end = p.time.start, p.time.end
    p.context = _text(values.get("context"), "context").lower()
    p.language = _text(values.get("language"), "language").lower() or None
    p.active_path = _text(values.get("active_path"), "active_path") or None
    p.context_tags = [t.lower() for t in split_multi(values.get("context_tags"), "context_tags")]
    p.context_types = _memory_types(split_multi(values.get("context_types"), "context_types"), p.warnings)
    p.warnings.extend(_language_notes(p.language, p.active_path))
    p.priority_ids = list(dict.fromkeys(_memory_id(v) for v in split_multi(values.get("priority_ids"), "priority_ids")))
    p.expand_relations = _bool(values.get("expand_relations"), "expand_relations", False)
    p.expand_entities = _bool(values.get("expand_entities"), "expand_entities", False)
    p.relation_limit = _int(values.get("relation_limit"), "relation_limit", config.relation_limit, 1, 200,
                            p.warnings)
    p.expansion_limit = _int(values.get("expansion_limit"), "expansion_limit", config.expansion_limit, 1,
                             500, p.warnings)
    p.expand_min_importance = _unit_float(values.get("expand_min_importance"), "expand_min_importance", None)
    p.expand_min_strength = _unit_float(values.get("expand_min_strength"), "expand_min_strength", None)
    p.expand_respect_tags = _bool(values.get("expand_respect_tags"), "expand_respect_tags", False)

    p.state_mode = _choice(values.get("state_mode"), "state_mode", STATE_MODES, "current")
    if values.get("current_only") is not None:
        asked = p.state_mode
        current = _bool(values["current_only"], "current_only", True)
        p.state_mode = "current" if current else "history"
        if not _blank(values.get("state_mode")) and asked != p.state_mode:
            p.warnings.append(f"'state_mode' {asked} was not used: 'current_only' {str(current).lower()} wins when "
                              f"both are given (as in AutoMem), so the state mode is {p.state_mode}")
    p.state_debug = _bool(values.get("state_debug"), "state_debug", False)
    if p.state_debug and p.state_mode == "history":
        p.warnings.append("'state_debug' has nothing to report in state_mode history: the current-state filter "
                          "does not run, so nothing is hidden or replaced")
    p.recency_bias = _choice(values.get("recency_bias"), "recency_bias", RECENCY_MODES, config.recency_bias)
    p.scope_fallback = _bool(values.get("scope_fallback"), "scope_fallback", False)
    if p.scope_fallback and not (p.tags and (p.query or p.queries or p.embedding is not None)):
        p.warnings.append("'scope_fallback' was not used: it fills a short answer of a tag-scoped recall "
                          "('tags') with a query or an embedding from an unscoped vector search; this recall "
                          + ("has no 'tags'" if not p.tags else "has no query"))
    p.min_score = _unit_float(values.get("min_score"), "min_score", config.min_score) or 0.0
    p.adaptive_floor = _bool(values.get("adaptive_floor"), "adaptive_floor", config.adaptive_floor)
    p.auto_decompose = _bool(values.get("auto_decompose"), "auto_decompose", False)
    if not _blank(values.get("per_query_limit")) and not p.queries and not (p.auto_decompose and p.query):
        p.warnings.append("'per_query_limit' was not used: it cuts each of several 'queries' (or of "
                          "auto_decompose's searches); one query is cut at 'limit'")
    if p.auto_decompose and (p.queries or not p.query):
        p.warnings.append("'auto_decompose' was not used: " + ("'queries' was given, and they run as given (as "
                          "in AutoMem)" if p.queries else "there is no 'query' to decompose"))

    sort = _choice(values.get("sort"), "sort", SORT_MODES, "score")
    if sort == "score" and not p.query and not p.queries and p.embedding is None and p.has_window:
        sort = "time_desc"
        if not _blank(values.get("sort")):  # the spec's switch, said when score was asked for
            p.warnings.append("'sort' score was not used: a time window without a query or an embedding is "
                              "listed newest first (time_desc); give a query to rank by score")
    p.sort = sort
    if sort != "score" and not _blank(values.get("recency_bias")) and p.recency_bias != "off":
        p.warnings.append(f"'recency_bias' {p.recency_bias} was not used: it re-ranks a score-sorted answer, and "
                          f"this one is in {sort} order")
    if sort != "score" and p.adaptive_floor and not _blank(values.get("adaptive_floor")):
        p.warnings.append(f"'adaptive_floor' was not used: it cuts weak results of a score-sorted answer, and "
                          f"this one is in {sort} order (min_score still applies)")
    p.warnings.extend(_expansion_notes(values, p))
    return p


def _excluded(tag: str | None, excluded: list[str]) -> bool:
    """Whether every memory with ``tag`` is left out by ``excluded`` (whole-segment prefixes)."""
    return bool(tag) and any(tag == e or tag.startswith(e + ":") for e in excluded)


def _replaced_bounds(time_query: Any, start: Any, end: Any, now: datetime) -> list[str]:
    """Which bounds of an understood ``time_query`` the explicit ``start``/``end`` replaced (the spec: explicit
    timestamps win), said; AutoMem answers with the expression's window silently overruled."""
    given = [name for name, value in (("start", start), ("end", end)) if not _blank(value)]
    if not given:
        return []
    own = time_window(time_query, None, None, now)
    replaced = [name for name in given if getattr(own, name) is not None]
    if len(replaced) == 2:
        return [f"'time_query' {own.expression!r} was not used: 'start' and 'end' set both bounds (explicit "
                "timestamps win)"]
    return [f"'{name}' replaced the {name} of 'time_query' {own.expression!r} (explicit timestamps win)"
            for name in replaced]


def _memory_types(names: list[str], warnings: list[str]) -> list[str]:
    """``context_types`` as stored types (an alias as the type ``store`` files it under, as AutoMem's
    types are read on store); a name that is no type is kept, title-cased as AutoMem does, and said."""
    out = []
    for name in names:
        canonical = TYPE_ALIASES.get(name.strip().lower().replace(" ", "_").replace("-", "_"))
        if canonical is None:
            warnings.append(f"'context_types' {name!r} is not a memory type ({', '.join(MEMORY_TYPES)}): it "
                            "boosts nothing")
        out.append(canonical or name.title())
    return list(dict.fromkeys(out))


def _language_notes(language: str | None, active_path: str | None) -> list[str]:
    """A ``language`` or ``active_path`` that names no language recall knows, or a path ``language`` overrules."""
    if not language and not active_path:  # every recall passes here: most name neither
        return []
    notes = []
    wanted = (language or "").strip().lower()
    named = next((key for key, aliases in LANGUAGE_ALIASES.items() if wanted == key or wanted in aliases),
                 None) if language else None
    if language and named is None:
        notes.append(f"'language' {language!r} is not a language recall knows ({', '.join(LANGUAGE_ALIASES)}): "
                     "it boosts nothing")
    if active_path:
        from_path = EXTENSION_LANGUAGE_MAP.get(PurePath(active_path.strip()).suffix.lower())
        if from_path is None:
            notes.append(f"'active_path' names no language recall knows by its extension "
                         f"({' '.join(EXTENSION_LANGUAGE_MAP)}): it boosts nothing")
        elif named is not None and named != from_path:
            notes.append(f"'active_path' ({from_path}) was not used: 'language' {named} wins")
    return notes


def _expansion_notes(values: Mapping[str, Any], p: RecallParams) -> list[str]:
    """The expansion options given without the expansion they shape (AutoMem ignores them silently):
    ``relation_limit`` and the two minimums shape relation expansion only, ``expansion_limit`` and
    ``expand_respect_tags`` both expansions; respecting tags needs ``tags``."""
    notes = []
    for name in ("relation_limit", "expand_min_strength", "expand_min_importance"):
        if not _blank(values.get(name)) and not p.expand_relations:
            notes.append(f"'{name}' was not used: it shapes relation expansion only, and expand_relations "
                         "is not on")
    expanding = p.expand_relations or p.expand_entities
    if not _blank(values.get("expansion_limit")) and not expanding:
        notes.append("'expansion_limit' was not used: neither expand_relations nor expand_entities is on")
    if p.expand_respect_tags and not expanding:
        notes.append("'expand_respect_tags' was not used: neither expand_relations nor expand_entities is on")
    elif p.expand_respect_tags and not p.tags:
        notes.append("'expand_respect_tags' was not used: the recall has no 'tags' to keep the expansion in")
    return notes
