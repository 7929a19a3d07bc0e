"""The recall scope: as SQL for the channels, and checked in Python for memories
that arrive outside them (state replacements, graph and entity expansions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..timeparse import format_timestamp
from .params import RecallParams

if TYPE_CHECKING:
    from ..storage.statements import Statements


# The key of a scope's tag test inside an FTS5 search (alias f; see scope_clause):
# on a tag scope of a few thousand memories at 100k, about 3× faster than m.pk.
FTS_SCOPE_KEY = "+f.rowid"


def scope_clause(sql: "Statements", params: RecallParams, *, with_tags: bool = True,
                 driving: bool = True, key: str | None = None) -> str:
    """The WHERE clause (alias m) for the filters in use, from the scope_*.sql fragments.

    ``driving`` picks the tag test that lets the tag index drive the search
    (``key IN (...)``); otherwise a per-row EXISTS, cheap when the rows to
    check are few (the hits of a kNN). ``key`` is the column that test reads
    (default ``m.pk``, sql/scope_key.sql): an FTS5 search passes ``+f.rowid``
    so that hits outside the tags are dropped before their memories row is
    read (the ``+`` keeps FTS5 from taking the list as rowids to look up one
    by one).
    """
    parts = [sql.fragment("scope_base")]
    if params.has_window:
        parts.append(sql.fragment("scope_window"))
    if with_tags and params.tags:
        style = "in" if driving else "exists"
        slots = {} if key is None else {"scope_key": key}
        parts.append(sql.fragment(f"scope_tags_{params.tag_match}_{params.tag_mode}_{style}", **slots))
    if params.exclude_tags:
        parts.append(sql.fragment("scope_exclude"))
    return "\n  AND ".join(f"({part})" for part in parts)


def passes_scope(memory: dict[str, Any], params: RecallParams, excluded_types: tuple[str, ...],
                 *, with_tags: bool = True) -> bool:
    """The same rules as recall_scope_filter.sql: type, time window, exclude_tags and (optionally) tags."""
    if memory.get("type") in excluded_types:
        return False
    timestamp = memory.get("timestamp")
    if params.window_start is not None and (not timestamp or timestamp < format_timestamp(params.window_start)):
        return False
    if params.window_end is not None and (not timestamp or timestamp > format_timestamp(params.window_end)):
        return False
    prefixes = set(memory.get("tag_prefixes") or [])
    if params.exclude_tags and prefixes.intersection(params.exclude_tags):
        return False
    if with_tags and params.tags:
        have = prefixes if params.tag_match == "prefix" else {t.lower() for t in memory.get("tags") or []}
        wanted = set(params.tags)
        if params.tag_mode == "all":
            return wanted <= have
        return bool(wanted & have)
    return True
