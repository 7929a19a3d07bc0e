"""How the CLI shows times and states to a person (JSON keeps the stored ISO 8601 values).

Times are shown in the local time zone to the minute (``2026-11-27 14:03 UTC``),
dates as ``2026-11-27``; a state that is not current is named with what
makes it so (``[superseded by 3f2a9c1d]``, ``[expired 2026-11-27]``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from ..text import visible
from ..timeparse import human_time, short_date

__all__ = ["field_lines", "hidden_states_text", "human_time", "short_date", "state_marker", "state_words",
           "wrapped"]


def state_words(memory: Mapping[str, Any], state: Mapping[str, Any] | None,
                short_ids: Mapping[str, str] | None = None) -> str:
    """What a memory's state is, in words: ``superseded by 3f2a9c1d``, ``expired 2026-11-27``,
    ``archived``, ``not yet valid until 2027-01-01``; '' when current (or unknown)."""
    if not state or state.get("current", True):
        return ""
    status = state.get("status")
    head = state.get("superseded_by")
    head_text = (short_ids or {}).get(head, head[:8]) if head else None
    words = {
        "superseded": f"superseded by {head_text}" if head_text else "superseded",
        "expired": f"expired {short_date(memory.get('t_invalid'))}".rstrip(),
        "archived": "archived",
        "not_yet_valid": f"not yet valid until {short_date(memory.get('t_valid'))}".rstrip(),
    }.get(str(status), str(status))
    if head_text and status != "superseded":
        words += f", superseded by {head_text}"
    return words


def state_marker(memory: Mapping[str, Any], state: Mapping[str, Any] | None,
                 short_ids: Mapping[str, str] | None = None) -> str:
    """``[superseded by 3f2a9c1d] `` to put before a row's content; '' when current."""
    words = state_words(memory, state, short_ids)
    return f"[{words}] " if words else ""


STATE_LABELS = {"superseded": "superseded", "expired": "expired", "archived": "archived",
                "not_yet_valid": "not yet valid"}


def hidden_states_text(counts: Mapping[str, int], shown: tuple[str, ...]) -> str:
    """``2 not shown: 1 superseded, 1 expired`` for the states a filter left out ('' for none)."""
    hidden = {k: v for k, v in counts.items() if k not in shown and v}
    if not hidden:
        return ""
    parts = ", ".join(f"{v} {STATE_LABELS.get(k, k)}" for k, v in hidden.items())
    return f"{sum(hidden.values())} not shown: {parts}"


def field_lines(rows: list[tuple[str, str]], width: int) -> list[str]:
    """``name  value`` lines, names aligned, each value wrapped under itself to ``width`` cells
    (a word longer than the room, say a full id, is broken only past the room it has)."""
    if not rows:
        return []
    name_width = max(len(name) for name, _ in rows)
    indent = " " * (name_width + 2)
    room = max(20, width - len(indent))
    lines = []
    for name, value in rows:
        wrapped = textwrap.wrap(visible(value), room, break_on_hyphens=False) or [""]
        lines.append(f"{name.ljust(name_width)}  {wrapped[0]}")
        lines.extend(indent + rest for rest in wrapped[1:])
    return lines


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` (its own lines kept) wrapped to ``width`` cells, continuations under ``indent``."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(visible(paragraph), width, subsequent_indent=indent, break_on_hyphens=False,
                                   replace_whitespace=False, drop_whitespace=True) or [""])
    return lines
