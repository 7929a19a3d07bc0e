"""How the CLI shows times and states to a person (JSON keeps the stored ISO 8601 values).

Times are shown in the local time zone to the minute (``2026-11-27 14:03 UTC``),
dates as ``2026-11-27``; a state that is not current is named with what
makes it so (``[superseded by 3f2a9c1d]``, ``[expired 2026-11-27]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..text import plural


def _parsed(value: Any) -> datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def human_time(value: Any, now: datetime | None = None) -> str:
    """``2026-11-27 14:03 UTC`` in the local zone, ``(3 days ago)`` after it when ``now`` is
    given; the value itself when it is not a time, ``-`` when empty."""
    moment = _parsed(value)
    if moment is None:
        return str(value) if value else "-"
    local = moment.astimezone()
    text = local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or local.strftime("%z"))
    return text + (f" ({relative(moment, now)})" if now is not None else "")


def short_date(value: Any) -> str:
    """``2026-11-27``: the local date of a stored time ('' when empty)."""
    moment = _parsed(value)
    if moment is None:
        return str(value or "")[:10]
    return moment.astimezone().strftime("%Y-%m-%d")


def relative(moment: datetime, now: datetime) -> str:
    """``just now``, ``5 minutes ago``, ``3 days ago``, ``in 2 weeks``."""
    seconds = (now - moment).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 60:
        return "just now"
    for size, unit in ((365 * 86400, "year"), (30 * 86400, "month"), (7 * 86400, "week"),
                       (86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            amount = plural(int(seconds // size), unit)
            return f"in {amount}" if ahead else f"{amount} ago"
    return "just now"  # unreachable


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
