"""Browsing memories: filters, an order and a page (``MemoryStore.list_memories``).

Not a search: every memory that passes the filters, newest first by default.
The filters are the ones a person reaches for (tags as recall filters them,
types, a context, a time range); each becomes a fragment of the WHERE clause
only when it is used, so SQLite plans for the filters actually given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import apsw

from ..classify import normalize_memory_type
from ..errors import ValidationError
from ..tags import canonical_prefix_filter, normalize_tags, parse_tags, prepare_tag_filters
from ..timegrammar import read_time_expression
from ..timeparse import format_timestamp, parse_timestamp, shifted
from ..validation import validate_context_name, validate_int
from .records import rows_as_dicts, to_record
from .statements import Statements

MAX_LIMIT = 200
# The states a memory is shown in (recall/state.py's shown_status), and the groups a filter names.
STATES = ("current", "superseded", "expired", "archived", "not_yet_valid")
STATE_FILTERS = {"all": STATES, "not_current": STATES[1:], **{s: (s,) for s in STATES}}
# Sort name -> ORDER BY; the id breaks ties so pages never overlap.
ORDERS = {
    "time_desc": "m.timestamp DESC, m.id ASC",
    "time_asc": "m.timestamp ASC, m.id ASC",
    "updated_desc": "m.updated_at DESC, m.id ASC",
    "updated_asc": "m.updated_at ASC, m.id ASC",
    "importance": "m.importance DESC, m.timestamp DESC, m.id ASC",
    "accessed": "m.last_accessed DESC, m.id ASC",
}
SORTS = tuple(ORDERS)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def time_bound(value: Any, field: str, now: datetime, *, end: bool,
               notes: list[str] | None = None) -> str | None:
    """A bound of the browse window: an ISO 8601 time, or a time expression such as 'last week'.

    An expression stands for its window: ``since`` takes the window's start,
    ``until`` its end, so ``since=yesterday, until=yesterday`` is yesterday.
    A bare date as ``until`` means through the end of that day.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        reading = read_time_expression(value, now)
        start, stop = (reading.start, reading.end) if reading.understood else (None, None)
        if notes is not None:
            notes.extend(f"{field} {note}" for note in reading.notes)  # "04/05/2026": which reading
        bound = stop if end else start
        if bound is not None:
            return format_timestamp(bound)
        if end and _DATE_ONLY.fullmatch(value.strip()):
            return format_timestamp(shifted(parse_timestamp(value.strip(), field=field), timedelta(days=1)))
    try:
        return format_timestamp(parse_timestamp(value, field=field))
    except ValidationError:
        raise ValidationError(f"'{field}' must be an ISO 8601 time or a time expression such as "
                              f"'today', 'yesterday', 'last week' or 'last 30 days' (got {value!r})") from None


def list_page(conn: apsw.Connection, sql: Statements, *, now: datetime, tags: Any = None,
              tag_mode: str = "any", tag_match: str = "prefix", types: Any = None,
              context: str | None = None, since: Any = None, until: Any = None,
              sort: str = "time_desc", limit: Any = 20, offset: Any = 0, state: str | None = None,
              stuck: Sequence[str] = ()) -> dict[str, Any]:
    """One page of memories passing the filters, with the total and paging fields.

    ``state`` (a key of STATE_FILTERS) keeps memories in those states; given
    at all (``all`` too), the page gets ``state_counts``: how many memories
    the other filters pass in each state, so a caller can say what was
    hidden. ``stuck``: the memories with a supersession edge whose chain
    reaches no current memory (recall/state.py's without_current_successor),
    which are not superseded.
    """
    if state is not None and state not in STATE_FILTERS:
        raise ValidationError(f"'state' must be one of {', '.join(STATE_FILTERS)}")
    if tag_mode not in ("any", "all"):
        raise ValidationError("'tag_mode' must be 'any' or 'all'")
    if tag_match not in ("prefix", "exact"):
        raise ValidationError("'tag_match' must be 'prefix' or 'exact'")
    if sort not in ORDERS:
        raise ValidationError(f"'sort' must be one of {', '.join(SORTS)}")
    # Out-of-range paging is an error here, not clamped: a browse should show what was asked.
    limit = validate_int(limit, "limit", default=20, minimum=-1, maximum=MAX_LIMIT + 1)
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"'limit' must be between 1 and {MAX_LIMIT}")
    offset = validate_int(offset, "offset", default=0, minimum=-1, maximum=2**62)
    if offset < 0:
        raise ValidationError("'offset' must be a non-negative integer")
    read_tags = parse_tags(tags)
    wanted = prepare_tag_filters(read_tags.tags)
    if tag_match == "prefix":
        wanted = list(dict.fromkeys(t for t in (canonical_prefix_filter(t) for t in wanted) if t))
    type_names = list(dict.fromkeys(normalize_memory_type(t) for t in
                                    normalize_tags(types, split_commas=True)))
    context_name = validate_context_name(context) if context is not None else None
    time_notes: list[str] = []
    start = time_bound(since, "since", now, end=False, notes=time_notes)
    stop = time_bound(until, "until", now, end=True, notes=time_notes)
    if start is not None and stop is not None and start >= stop:
        raise ValidationError(f"'since' ({start}) must be earlier than 'until' ({stop})")

    parts = []
    if wanted:
        parts.append(sql.fragment(f"scope_tags_{tag_match}_{tag_mode}_in"))
    if type_names:
        parts.append(sql.fragment("list_types"))
    if context_name is not None:
        parts.append(sql.fragment("list_context"))
    if start is not None:
        parts.append(sql.fragment("list_since"))
    if stop is not None:
        parts.append(sql.fragment("list_until"))
    where = "\n  AND ".join(f"({p})" for p in parts) or "1"
    bindings = {"tags": json.dumps(wanted), "tag_count": len(wanted), "types": json.dumps(type_names),
                "context": context_name, "since": start, "until": stop}
    state_counts: dict[str, int] | None = None
    if state is not None:
        bindings.update(now=format_timestamp(now), stuck=json.dumps(list(stuck)),
                        states=json.dumps(STATE_FILTERS[state]))
        state_counts = dict.fromkeys(STATES, 0)
        for name, count in conn.execute(sql.compose("memory_list_state_counts", list_filter=where), bindings):
            state_counts[name] = count
        if state != "all":
            where = f"{where}\n  AND ({sql.fragment('list_states')})"
    total = conn.execute(sql.compose("memory_list_count", list_filter=where), bindings).fetchone()[0]
    rows = list(rows_as_dicts(conn.execute(
        sql.compose("memory_list", list_filter=where, list_order=ORDERS[sort]),
        {**bindings, "limit": limit, "offset": offset})))
    memories = [to_record(r) for r in rows]
    filters: dict[str, Any] = {}
    if wanted:
        filters.update(tags=wanted, tag_mode=tag_mode, tag_match=tag_match)
    if type_names:
        filters["types"] = type_names
    if context_name is not None:
        filters["context"] = context_name
    if start is not None:
        filters["since"] = start
    if stop is not None:
        filters["until"] = stop
    page: dict[str, Any] = {
        "status": "success", "count": len(memories), "total": total, "limit": limit, "offset": offset,
        "has_more": offset + len(memories) < total, "sort": sort, "filters": filters, "memories": memories,
    }
    if state is not None:
        page["state"] = state
        page["state_counts"] = state_counts
    if page["has_more"]:
        page["next_offset"] = offset + len(memories)
    if read_tags.notes or time_notes:
        page["warnings"] = read_tags.notes + time_notes
    return page


BY_TAG_MAX_LIMIT = 200


def by_tag_page(conn: apsw.Connection, sql: Statements, tags: Any, *, limit: int, offset: int,
                prefix: bool) -> dict[str, Any]:
    """``MemoryStore.by_tag``'s answer: a page of the memories with any of ``tags``."""
    parsed = parse_tags(tags)
    wanted = prepare_tag_filters(parsed.tags)
    if prefix:
        wanted = list(dict.fromkeys(t for t in (canonical_prefix_filter(t) for t in wanted) if t))
    if not wanted:
        raise ValidationError("'tags' query parameter is required")
    notes = list(parsed.notes)
    limit = validate_int(limit, "limit", default=20, minimum=1, maximum=BY_TAG_MAX_LIMIT, notes=notes)
    offset = validate_int(offset, "offset", default=0, minimum=-1, maximum=2**62)
    if offset < 0:
        raise ValidationError("'offset' must be a non-negative integer")
    rows = list(rows_as_dicts(conn.execute(
        sql["by_tag_prefix" if prefix else "by_tag"],
        {"tags": json.dumps(wanted), "limit": limit + 1, "offset": offset})))
    has_more = len(rows) > limit
    memories = [to_record(r) for r in rows[:limit]]
    result: dict[str, Any] = {
        "status": "success", "tags": wanted, "count": len(memories), "limit": limit,
        "offset": offset, "has_more": has_more, "memories": memories,
    }
    if has_more:
        result["next_offset"] = offset + limit
    if prefix:
        result["tag_match"] = "prefix"
    if notes:
        result["warnings"] = notes
    return result
