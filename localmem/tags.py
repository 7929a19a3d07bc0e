"""Tag validation, hierarchical tag prefixes and tag-filter preparation (§1.4b)."""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, NamedTuple

from localmem.errors import ValidationError

__all__ = [
    "MAX_TAG_LENGTH",
    "canonical_prefix_filter",
    "compute_tag_prefixes",
    "normalize_tags",
    "parse_tags",
    "read_tag_field",
    "with_tags_read",
    "ParsedTags",
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


# Tag input is read one way everywhere (CLI, HTTP, MCP, Python): commas,
# semicolons and whitespace separate tags and a leading '#' is dropped, so
# "work;urgent", "work urgent" and "#work" never become one odd tag. Commas are
# the documented separator; the other changes are reported in a note.
_TAG_INPUT_SEPARATORS = re.compile(r"[,;\s]+")
_QUIET_SEPARATORS = re.compile(r",")
MAX_TAG_NOTES = 5


class ParsedTags(NamedTuple):
    """Tags read from user input, and a note for each input that was split or changed."""

    tags: list[str]
    notes: list[str]


def parse_tags(value: object, field: str = "tags") -> ParsedTags:
    """Read tag input: None, a string of tags, or a list of such strings.

    Every string (alone or in a list) splits on commas, semicolons and
    whitespace; a leading ``#`` is dropped; empty parts and case-insensitive
    duplicates go (the first spelling wins). A split on anything but commas,
    or a dropped ``#``, adds a note naming the input and what it became.
    """
    if value is None:
        return ParsedTags([], [])
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValidationError(_TAGS_TYPE_MESSAGE.replace("'tags'", f"'{field}'"))
    parts: list[str] = []
    notes: list[str] = []
    changed = 0
    for item in items:
        if not isinstance(item, str):
            raise ValidationError(_TAGS_TYPE_MESSAGE.replace("'tags'", f"'{field}'"))
        read = [part.lstrip("#") for part in _TAG_INPUT_SEPARATORS.split(item)]
        read = [part for part in read if part]
        plain = [part.strip() for part in _QUIET_SEPARATORS.split(item) if part.strip()]
        if read != plain:
            changed += 1
            if len(notes) < MAX_TAG_NOTES:
                notes.append(_tag_note(field, item, read))
        parts.extend(read)
    if changed > MAX_TAG_NOTES:
        notes.append(f"'{field}': {changed - MAX_TAG_NOTES} more value(s) were split or changed the same way")
    return ParsedTags(normalize_tags(parts), notes)


def read_tag_field(fields: MutableMapping[str, object], field: str = "tags", where: str = "") -> list[str]:
    """Parse ``fields[field]`` in place (when given); the notes, each starting with ``where``."""
    if fields.get(field) is None:
        return []
    parsed = parse_tags(fields[field], field)
    fields[field] = parsed.tags
    return [f"{where}{note}" for note in parsed.notes]


def with_tags_read(fields: Mapping[str, Any], where: str, stacklevel: int) -> dict[str, Any]:
    """A copy of ``fields`` with its tags read by the one rule; a Python warning for each change,
    attributed to the frame ``stacklevel`` (1: the function calling this). The interfaces
    parse first and report the notes in their answers, so they get none here."""
    fields = dict(fields)
    for note in read_tag_field(fields, where=where):
        warnings.warn(note, stacklevel=stacklevel + 1)
    return fields


def _tag_note(field: str, item: str, read: list[str]) -> str:
    shown = ", ".join(repr(part) for part in read) or "nothing"
    why = []
    if any(part.startswith("#") for part in _TAG_INPUT_SEPARATORS.split(item.strip())):
        why.append("a leading '#' is dropped")
    if re.search(r"[;\s]", item.strip()):
        why.append("tags are separated by commas, semicolons or spaces; join words with '-' to keep one tag")
    return f"'{field}': {item!r} was read as {shown} ({'; '.join(why)})"


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
