"""Short memory ids, as git abbreviates commits: resolve a prefix, and abbreviate ids.

A prefix is resolved with a range query on the UNIQUE index of ``memories.id``
(never a scan), so it costs the same at any size. Ids are canonical UUIDs:
lowercase hex with hyphens after characters 8, 12, 16 and 20.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

import apsw

from ..errors import AmbiguousIdError, NotFoundError, ValidationError
from .statements import Statements

MIN_PREFIX = 4          # hex digits a prefix needs, as git's minimum abbreviation
DISPLAY_LENGTH = 8      # the first UUID group: unique among ~65k ids half the time, extended when not
MAX_CANDIDATES = 10     # how many ids an ambiguity error lists
_HYPHENS_AT = (8, 12, 16, 20)  # in the hex digits: where the canonical form puts a hyphen
_PREFIX = re.compile(r"[0-9a-f-]+")


def _canonical_prefix(text: str) -> str:
    """``text`` lowercased, its hyphens moved to where a UUID has them (so they may be left out)."""
    digits = text.replace("-", "")
    parts, start = [], 0
    for end in _HYPHENS_AT:
        if len(digits) <= end:
            break
        parts.append(digits[start:end])
        start = end
    parts.append(digits[start:])
    return "-".join(parts)


def resolve_id(conn: apsw.Connection, sql: Statements, text: object, field: str = "memory_id") -> str:
    """The full id that ``text`` (a full UUID, or a prefix of at least ``MIN_PREFIX`` hex digits) names.

    A full UUID comes back canonical without a lookup (the caller's read says
    whether it exists). A prefix no id has raises ``NotFoundError``; one that
    several ids have raises ``AmbiguousIdError`` listing them.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"{field} must be a memory id or an id prefix")
    value = text.strip().lower()
    try:
        return str(uuid.UUID(value))
    except ValueError:
        pass
    if not _PREFIX.fullmatch(value) or len(value.replace("-", "")) >= 32:
        raise ValidationError(f"{field} {text.strip()!r} is not a memory id or id prefix "
                              "(hex digits, hyphens optional)")
    prefix = _canonical_prefix(value)
    if len(prefix.replace("-", "")) < MIN_PREFIX:
        raise ValidationError(f"{field} prefix {text.strip()!r} is too short: give at least "
                              f"{MIN_PREFIX} hex digits of the id")
    found = [row[0] for row in conn.execute(sql["memory_ids_by_prefix"],
                                             {"prefix": prefix, "limit": MAX_CANDIDATES + 1})]
    if not found:
        raise NotFoundError(f"no memory id starts with {prefix}")
    if len(found) > 1:
        shown = found[:MAX_CANDIDATES]
        more = len(found) > MAX_CANDIDATES
        count = f"more than {MAX_CANDIDATES}" if more else str(len(found))
        raise AmbiguousIdError(f"{field} prefix {prefix} is ambiguous: {count} memories have ids "
                               "starting with it; give more digits", candidates=shown, more=more)
    return found[0]


def _common_length(a: str, b: str | None) -> int:
    if b is None:
        return 0
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def abbreviate_ids(conn: apsw.Connection, sql: Statements, ids: Iterable[str],
                   min_length: int = DISPLAY_LENGTH) -> dict[str, str]:
    """Each id's shortest prefix of at least ``min_length`` characters that no other stored id shares."""
    short: dict[str, str] = {}
    for memory_id in ids:
        if memory_id in short:
            continue
        before, after = conn.execute(sql["memory_id_neighbours"], {"id": memory_id}).fetchone()
        length = max(min_length, _common_length(memory_id, before) + 1, _common_length(memory_id, after) + 1)
        if length < len(memory_id) and memory_id[length - 1] == "-":
            length += 1  # never end on a hyphen: the next digit is what tells them apart
        short[memory_id] = memory_id[:length]
    return short
