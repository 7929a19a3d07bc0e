"""Tag validation, hierarchical tag prefixes and tag-filter preparation (§1.4b)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from localmem.errors import ValidationError

__all__ = [
    "MAX_TAG_LENGTH",
    "canonical_prefix_filter",
    "compute_tag_prefixes",
    "normalize_tags",
    "prepare_tag_filters",
]

MAX_TAG_LENGTH = 256

_TAG_SEPARATORS = re.compile(r"[:/]")
_TAGS_TYPE_MESSAGE = "'tags' must be a list of strings or a single string"


def _check_tag(tag: str) -> None:
    if "\x00" in tag:
        raise ValidationError("Tags must not contain NUL characters")
    try:
        tag.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("Tags must be valid Unicode text (lone surrogate)") from None
    if len(tag) > MAX_TAG_LENGTH:
        raise ValidationError(
            f"Tag too long ({len(tag)} characters); the maximum is {MAX_TAG_LENGTH}"
        )


def normalize_tags(value: object, *, split_commas: bool = False) -> list[str]:
    """Validate and clean user-supplied tags.

    None → []; a string → one tag (or its comma-separated parts when
    ``split_commas``); a list/tuple of strings → those strings. Tags are
    stripped, empty ones dropped and case-insensitive duplicates removed
    (the first spelling wins; case is otherwise preserved).
    """
    if value is None:
        return []
    if isinstance(value, str):
        items: list[object] = list(value.split(",")) if split_commas else [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValidationError(_TAGS_TYPE_MESSAGE)

    seen: set[str] = set()
    tags: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError(_TAGS_TYPE_MESSAGE)
        tag = item.strip()
        if not tag:
            continue
        _check_tag(tag)
        key = tag.lower()
        if key in seen:
            continue
        seen.add(key)
        tags.append(tag)
    return tags


def _segments(tag: str) -> list[str]:
    return [part for part in _TAG_SEPARATORS.split(tag.lower()) if part]


def compute_tag_prefixes(tags: Iterable[str]) -> list[str]:
    """Cumulative segment prefixes of the lowercased tags, unique and in order.

    Segments are split on ``:`` or ``/`` (empty ones skipped) and rejoined
    with ``:``: ``"Project:Foo/Bar"`` → ``project``, ``project:foo``,
    ``project:foo:bar``.
    """
    seen: set[str] = set()
    prefixes: list[str] = []
    for tag in tags:
        for prefix in _tag_prefixes(tag):
            if prefix not in seen:
                seen.add(prefix)
                prefixes.append(prefix)
    return prefixes


@functools.lru_cache(maxsize=4096)
def _tag_prefixes(tag: str) -> tuple[str, ...]:
    """One tag's prefixes, cached: a store's tags repeat from memory to memory."""
    parts = _segments(tag)
    return tuple(":".join(parts[:end]) for end in range(1, len(parts) + 1))


def prepare_tag_filters(tags: Iterable[str] | str | None) -> list[str]:
    """Lowercase and strip filter tags, dropping empty ones and duplicates."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    seen: set[str] = set()
    filters: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError(_TAGS_TYPE_MESSAGE)
        value = tag.strip().lower()
        if value and value not in seen:
            seen.add(value)
            filters.append(value)
    return filters


def canonical_prefix_filter(tag: str) -> str:
    """Bring a prefix-mode filter into the form used by stored tag prefixes.

    Lowercases, treats ``/`` like ``:`` and drops empty segments, so the filter
    ``project/foo`` matches a memory tagged ``project:foo``. This deliberately
    differs from AutoMem, which compares the raw filter against the
    ``:``-joined prefixes and so never matches a ``/`` filter.
    """
    return ":".join(_segments(tag.strip()))
