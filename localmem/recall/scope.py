"""The recall scope checked in Python, for memories that arrive outside the SQL channels
(state replacements, graph and entity expansions, priority ids)."""

from __future__ import annotations

from typing import Any

from ..timeparse import format_timestamp
from .params import RecallParams


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
