"""The RecallRequest of POST /api/v1/memory/recall: parsing and validation.

Invalid requests raise ``RequestValidationError`` — a ``ValidationError``
with code 422 and a pydantic-style ``detail`` list (``loc``, ``msg``,
``type``), which the HTTP route returns as the body of its 422.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

from ..classify import TYPE_ALIASES
from ..errors import ValidationError
from ..tags import canonical_prefix_filter
from ..timeparse import parse_timestamp
from ..validation import MAX_CONTEXT_NAME, check_text

SEARCH_MODES = ("hybrid", "semantic", "keyword")
TAG_MODES = ("any", "all")
FILTER_KEYS = ("context_id", "scope", "type", "tags", "tag_mode")
REQUEST_FIELDS = ("query", "k", "use_rerank", "filters", "search_mode", "include_explore_hints",
                  "include_superseded", "full")
MAX_QUERY_CHARS = 10_000
MAX_K = 100
MAX_FILTER_VALUES = 50
DEFAULT_K = 5


class RequestValidationError(ValidationError):
    """An invalid recall_v1 request (HTTP 422), with every problem found in ``detail``."""

    code = 422

    def __init__(self, detail: list[dict[str, Any]]) -> None:
        # What the caller sent and is echoed (a field name in ``loc``) must render as JSON:
        # a lone surrogate in a key would turn the 422 into a 500.
        self.detail = detail = [{**entry, "loc": [_printable(part) for part in entry["loc"]],
                                 "msg": _printable(entry["msg"])} for entry in detail]
        first = detail[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        message = f"{where}: {first['msg']}" if where else first["msg"]
        if len(detail) > 1:
            message += f" (and {len(detail) - 1} more problem{'s' if len(detail) > 2 else ''})"
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "detail": self.detail}


@dataclass
class Filters:
    context_id: str | None = None
    scope: str | None = None
    types: list[str] = field(default_factory=list)      # canonical memory types
    raw_types: list[str] = field(default_factory=list)  # lowercased as given (metadata "type")
    tags: list[str] = field(default_factory=list)       # canonical prefix filters
    requested_tags: dict[str, str] = field(default_factory=dict)  # canonical -> as given
    tag_mode: str = "any"
    notes: list[str] = field(default_factory=list)  # what was given and not used, said as ``warnings``


@dataclass
class RecallRequest:
    query: str
    k: int = DEFAULT_K
    use_rerank: bool | None = None
    filters: Filters = field(default_factory=Filters)
    search_mode: str = "hybrid"
    search_mode_given: bool = False
    include_explore_hints: bool = False
    include_superseded: bool = False
    full: int = 0
    now: datetime | None = None


class _Collector:
    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []

    def add(self, loc: tuple[Any, ...], msg: str, kind: str, value: Any = None) -> None:
        # Everything echoed must render as strict JSON: no NaN or infinity, no
        # lone surrogates (a key or value the caller sent), or the 422 becomes a 500.
        entry: dict[str, Any] = {"loc": ["body", *(_printable(part) for part in loc)],
                                 "msg": _printable(msg), "type": kind}
        if value is not None and isinstance(value, (str, int, float, bool)):
            if not (isinstance(value, float) and not math.isfinite(value)):
                entry["input"] = _printable(value)
        self.errors.append(entry)


def _printable(value: Any) -> Any:
    """Text with lone surrogates escaped (``\\ud800``); other values unchanged."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _integer(value: Any, loc: tuple[Any, ...], errors: _Collector, *, default: int,
             minimum: int, maximum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        errors.add(loc, "Input should be a valid integer", "int_type", value)
        return default
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            errors.add(loc, "Input should be a valid integer", "int_from_float", value)
            return default
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            errors.add(loc, "Input should be a valid integer", "int_parsing", value)
            return default
    if not isinstance(value, int):
        errors.add(loc, "Input should be a valid integer", "int_type")
        return default
    if value < minimum:
        errors.add(loc, f"Input should be greater than or equal to {minimum}", "greater_than_equal", value)
        return default
    if value > maximum:
        errors.add(loc, f"Input should be less than or equal to {maximum}", "less_than_equal", value)
        return default
    return value


def _boolean(value: Any, loc: tuple[Any, ...], errors: _Collector, default: bool | None
             ) -> bool | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    errors.add(loc, "Input should be a valid boolean", "bool_type",
               value if isinstance(value, (str, int, float)) else None)
    return default


def _text(value: Any, loc: tuple[Any, ...], errors: _Collector, *, limit: int) -> str | None:
    if not isinstance(value, str):
        errors.add(loc, "Input should be a valid string", "string_type")
        return None
    text = value.strip()
    if not text:
        errors.add(loc, "String should have at least 1 character", "string_too_short")
        return None
    if len(text) > limit:
        errors.add(loc, f"String should have at most {limit} characters", "string_too_long")
        return None
    try:
        return check_text(text, str(loc[-1]))
    except ValidationError as exc:
        errors.add(loc, exc.message, "string_invalid")
        return None


def _string_list(value: Any, loc: tuple[Any, ...], errors: _Collector) -> list[str]:
    """A string (comma-separated allowed) or a list of strings; blanks dropped."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        errors.add(loc, "Input should be a string or a list of strings", "list_type")
        return []
    out: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, str):
            errors.add((*loc, index), "Input should be a valid string", "string_type")
            continue
        text = item.strip()
        if not text:
            continue
        try:
            out.append(check_text(text, ".".join(str(part) for part in loc)))
        except ValidationError as exc:
            errors.add((*loc, index), exc.message, "string_invalid")
    if len(out) > MAX_FILTER_VALUES:
        errors.add(loc, f"List should have at most {MAX_FILTER_VALUES} items", "too_long")
        return []
    return out


def _filters(value: Any, errors: _Collector) -> Filters:
    filters = Filters()
    if value is None:
        return filters
    if not isinstance(value, Mapping):
        errors.add(("filters",), "Input should be a valid dictionary", "dict_type")
        return filters
    for key in value:
        if key not in FILTER_KEYS:
            errors.add(("filters", str(key)),
                       f"Unknown filter; expected one of {', '.join(FILTER_KEYS)}", "extra_forbidden")
    if value.get("context_id") is not None:
        filters.context_id = _text(value["context_id"], ("filters", "context_id"), errors,
                                   limit=MAX_CONTEXT_NAME)
    if value.get("scope") is not None:
        scope = _text(value["scope"], ("filters", "scope"), errors, limit=64)
        filters.scope = scope.lower() if scope else None
    for raw in _string_list(value.get("type"), ("filters", "type"), errors):
        lowered = raw.lower()
        canonical = TYPE_ALIASES.get(lowered)
        if canonical is not None and canonical not in filters.types:
            filters.types.append(canonical)
        if lowered not in filters.raw_types:
            filters.raw_types.append(lowered)
    for raw in _string_list(value.get("tags"), ("filters", "tags"), errors):
        canonical = canonical_prefix_filter(raw)
        if canonical and canonical not in filters.requested_tags:
            filters.requested_tags[canonical] = raw
            filters.tags.append(canonical)
    mode = value.get("tag_mode")
    if mode is not None:
        if isinstance(mode, str) and mode.strip().lower() in TAG_MODES:
            filters.tag_mode = mode.strip().lower()
        else:
            errors.add(("filters", "tag_mode"), "Input should be 'any' or 'all'", "literal_error",
                       mode if isinstance(mode, str) else None)
        if not filters.tags and filters.tag_mode != "any":
            filters.notes.append(f"filters.tag_mode {filters.tag_mode} was not used: it applies to filters.tags, "
                                 "and there are none")
    return filters


def parse_request(raw: Mapping[str, Any]) -> RecallRequest:
    """Validate a request (Python keyword arguments or a JSON body)."""
    errors = _Collector()
    query_value = raw.get("query")
    query: str | None = None
    if query_value is None:
        errors.add(("query",), "Field required", "missing")
    else:
        query = _text(query_value, ("query",), errors, limit=MAX_QUERY_CHARS)
    k = _integer(raw.get("k"), ("k",), errors, default=DEFAULT_K, minimum=1, maximum=MAX_K)
    use_rerank = _boolean(raw.get("use_rerank"), ("use_rerank",), errors, None)
    filters = _filters(raw.get("filters"), errors)
    mode_value = raw.get("search_mode")
    search_mode = "hybrid"
    if mode_value is not None:
        if isinstance(mode_value, str) and mode_value.strip().lower() in SEARCH_MODES:
            search_mode = mode_value.strip().lower()
        else:
            errors.add(("search_mode",), "Input should be 'hybrid', 'semantic' or 'keyword'",
                       "literal_error", mode_value if isinstance(mode_value, str) else None)
    hints = _boolean(raw.get("include_explore_hints"), ("include_explore_hints",), errors, False)
    superseded = _boolean(raw.get("include_superseded"), ("include_superseded",), errors, False)
    full = _integer(raw.get("full"), ("full",), errors, default=0, minimum=0, maximum=MAX_K)
    now = None
    if raw.get("now") is not None:
        try:
            now = parse_timestamp(raw["now"], field="now")
        except ValidationError as exc:
            errors.add(("now",), exc.message, "datetime_parsing")
    if errors.errors:
        raise RequestValidationError(errors.errors)
    assert query is not None
    return RecallRequest(
        query=query, k=k, use_rerank=use_rerank, filters=filters, search_mode=search_mode,
        search_mode_given=mode_value is not None, include_explore_hints=bool(hints),
        include_superseded=bool(superseded), full=full, now=now,
    )
