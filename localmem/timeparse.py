"""Timestamp parsing/formatting and the time window of a request.

The natural-language expressions themselves are read by localmem.timegrammar.
All datetimes leaving this module are timezone-aware and in UTC.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any


from localmem.errors import ValidationError
from localmem.timegrammar import read_time_expression

__all__ = [
    "TEMPORAL_INTENT",
    "from_epoch",
    "shifted",
    "format_timestamp",
    "parse_time_expression",
    "parse_timestamp",
    "query_has_temporal_intent",
    "resolve_time_window",
    "time_window",
    "TimeWindow",
]

UTC = timezone.utc

# Word-boundary, case-insensitive (automem-behaviour.md §1.4). Multi-word
# phrases accept any run of whitespace between their words.
TEMPORAL_INTENT = re.compile(
    r"\b(?:latest|most\s+recent|recently|current|currently|now|nowadays|today"
    r"|changed|updated|last\s+time|newest|these\s+days|anymore)\b",
    re.IGNORECASE,
)


def shifted(when: datetime, delta: timedelta) -> datetime:
    """``when + delta``, held at the calendar's ends (years 1 and 9999) instead of raising
    OverflowError: stored times may be anywhere in the calendar, and a window or band
    around one of them reaches no further than the calendar does."""
    try:
        return when + delta
    except OverflowError:
        end = datetime.max if delta > timedelta(0) else datetime.min
        return end.replace(tzinfo=when.tzinfo)


def from_epoch(seconds: float) -> datetime:
    """The UTC instant ``seconds`` after the epoch, held at the calendar's ends: the float
    epoch of 9999-12-31T23:59:59.999999 rounds to the first instant of year 10000."""
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):
        if seconds != seconds:  # NaN: no instant at all
            raise ValueError("no instant for NaN seconds") from None
        return (datetime.max if seconds > 0 else datetime.min).replace(tzinfo=UTC)


def _invalid(field: str) -> ValidationError:
    return ValidationError(f"Invalid {field}: Invalid ISO timestamp")


def _to_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken to be UTC; aware ones are converted."""
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _parse_iso_string(text: str) -> datetime:
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        # Python 3.10's fromisoformat is narrow; isoparse covers the other
        # strict ISO 8601 forms (never fuzzy parsing). Imported here: it costs a new
        # process ~25 ms and most timestamps never need it.
        from dateutil.parser import isoparse

        return isoparse(text)


def parse_timestamp(value: object, *, field: str = "timestamp") -> datetime:
    """Parse a datetime, ISO 8601 string or unix epoch into an aware UTC datetime.

    Raises ``ValidationError("Invalid <field>: Invalid ISO timestamp")`` for
    anything else (bools, NaN/inf, out-of-range numbers, empty or garbage text).
    """
    if isinstance(value, bool):
        raise _invalid(field)
    try:
        if isinstance(value, datetime):
            return _to_utc(value)
        if isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise _invalid(field)
            return datetime.fromtimestamp(value, tz=UTC)
        if isinstance(value, str):
            text = value.strip()
            if not text:
                raise _invalid(field)
            return _to_utc(_parse_iso_string(text))
    except ValidationError:
        raise
    except (ValueError, OverflowError, OSError, TypeError) as exc:
        raise _invalid(field) from exc
    raise _invalid(field)


def format_timestamp(dt: datetime) -> str:
    """Render ``dt`` as a UTC ISO 8601 string (naive input is taken as UTC).

    Strings produced here for 4-digit years sort chronologically, which the
    SQL range filters rely on.
    """
    return _to_utc(dt).isoformat()


def parse_time_expression(
    expr: str | None, now: datetime
) -> tuple[datetime | None, datetime | None]:
    """The ``(start, end)`` window of a natural-language time expression (localmem.timegrammar).

    ``now`` is the reference instant (naive is taken as UTC). Expressions
    that are not understood give ``(None, None)``; :func:`time_window` says why.
    """
    if not isinstance(expr, str) or not expr.strip():
        return None, None
    reading = read_time_expression(expr, now)
    return (reading.start, reading.end) if reading.understood else (None, None)


@dataclass(frozen=True)
class TimeWindow:
    """The time window of a request, and what it was made from."""

    start: datetime | None = None
    end: datetime | None = None
    expression: str | None = None  # the time_query as given (whitespace collapsed)
    timezone: str = "UTC"  # where the expression's days begin: "UTC" or "+02:00"
    error: str | None = None  # why the expression was not understood
    warning: str | None = None  # the same as the response says it
    requested: bool = False  # time_query, start or end was given
    notes: tuple[str, ...] = ()  # which reading was taken of an ambiguous expression ("04/05/2026")

    def describe(self) -> dict[str, str | None]:
        """The response's ``time_window`` block."""
        return {
            "start": format_timestamp(self.start) if self.start is not None else None,
            "end": format_timestamp(self.end) if self.end is not None else None,
            "expression": self.expression,
            "timezone": self.timezone,
        }


def _is_absent(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def time_window(
    time_query: str | None,
    start: object = None,
    end: object = None,
    now: datetime | None = None,
) -> TimeWindow:
    """The window from ``time_query``, with explicit ``start``/``end`` overriding each half.

    ``start``/``end`` that are None or blank are treated as absent; anything
    else must parse (``ValidationError("Invalid start time: ...")`` otherwise).
    An expression that is not understood leaves its halves open and sets
    ``warning``. ``now`` defaults to the current time.
    """
    reference = _to_utc(now) if now is not None else datetime.now(UTC)
    # Validate both explicit bounds before using either, so errors don't
    # depend on which half happens to be checked first.
    explicit_start = None if _is_absent(start) else parse_timestamp(start, field="start time")
    explicit_end = None if _is_absent(end) else parse_timestamp(end, field="end time")
    window_start = window_end = None
    expression = error = warning = None
    zone = "UTC"
    notes: tuple[str, ...] = ()
    if isinstance(time_query, str) and time_query.strip():
        reading = read_time_expression(time_query, reference)
        expression, zone = reading.expression, reading.timezone
        if reading.understood:
            window_start, window_end = reading.start, reading.end
            notes = tuple(f"time_query {note}" for note in reading.notes)
        else:
            error = f"{reading.expression!r} was not understood: {reading.error}"
            applied = ("only the explicit start/end apply" if explicit_start or explicit_end
                       else "no time window was applied")
            warning = f"time_query {error}; {applied}"
    if explicit_start is not None:
        window_start = explicit_start
    if explicit_end is not None:
        window_end = explicit_end
    if window_start is not None and window_end is not None and window_start > window_end:
        raise ValidationError(_reversed(window_start, window_end, explicit_start is not None,
                                        explicit_end is not None, expression))
    return TimeWindow(window_start, window_end, expression, zone, error, warning,
                      requested=expression is not None or explicit_start is not None
                      or explicit_end is not None, notes=notes)


def _reversed(start: datetime, end: datetime, own_start: bool, own_end: bool, expression: str | None) -> str:
    """Why a window that ends before it starts is refused (it could match nothing), naming
    where each bound came from."""
    def origin(own: bool) -> str:
        return "" if own else f" (from time_query {expression!r})"
    return (f"'start' ({format_timestamp(start)}){origin(own_start)} must not be later than "
            f"'end' ({format_timestamp(end)}){origin(own_end)}: the window would hold nothing")


def resolve_time_window(
    time_query: str | None,
    start: object = None,
    end: object = None,
    now: datetime | None = None,
) -> tuple[datetime | None, datetime | None]:
    """``(start, end)`` of :func:`time_window`."""
    window = time_window(time_query, start, end, now)
    return window.start, window.end


def query_has_temporal_intent(q: str) -> bool:
    """True when the query asks about recency ("latest", "currently", ...)."""
    if not isinstance(q, str) or not q:
        return False
    return TEMPORAL_INTENT.search(q) is not None


# -- shown to a person (the CLI, the demo): local time to the minute ---------------------------


def _shown_moment(value: Any) -> datetime | None:
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
    moment = _shown_moment(value)
    if moment is None:
        return str(value) if value else "-"
    local = moment.astimezone()
    text = local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or local.strftime("%z"))
    return text + (f" ({relative(moment, now)})" if now is not None else "")


def short_date(value: Any) -> str:
    """``2026-11-27``: the local date of a stored time ('' when empty)."""
    moment = _shown_moment(value)
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
            count = int(seconds // size)
            amount = f"{count} {unit}" + ("" if count == 1 else "s")
            return f"in {amount}" if ahead else f"{amount} ago"
    return "just now"  # unreachable
