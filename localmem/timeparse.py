"""Timestamp parsing/formatting and AutoMem's natural-language time windows.

All datetimes leaving this module are timezone-aware and in UTC.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone

from dateutil.parser import isoparse

from localmem.errors import ValidationError

__all__ = [
    "TEMPORAL_INTENT",
    "format_timestamp",
    "parse_time_expression",
    "parse_timestamp",
    "query_has_temporal_intent",
    "resolve_time_window",
]

UTC = timezone.utc

_MIN_UTC = datetime.min.replace(tzinfo=UTC)
_MAX_UTC = datetime.max.replace(tzinfo=UTC)

# Word-boundary, case-insensitive (automem-behaviour.md §1.4). Multi-word
# phrases accept any run of whitespace between their words.
TEMPORAL_INTENT = re.compile(
    r"\b(?:latest|most\s+recent|recently|current|currently|now|nowadays|today"
    r"|changed|updated|last\s+time|newest|these\s+days|anymore)\b",
    re.IGNORECASE,
)

_LAST_N_DAYS = re.compile(r"last\s+([+-]?)([0-9]+)\s+days")
# More days than timedelta holds (999,999,999) reaches past year 1 from any
# date: such an N means "all time", without turning thousands of digits
# into an int (which Python refuses past 4300 digits).
MAX_DAY_DIGITS = 9


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
        # strict ISO 8601 forms (never fuzzy parsing).
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


def _shift(dt: datetime, delta: timedelta) -> datetime:
    """``dt + delta`` clamped to the representable range instead of raising."""
    try:
        return dt + delta
    except OverflowError:
        return _MAX_UTC if delta > timedelta(0) else _MIN_UTC


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime | None:
    """First of the month at UTC midnight; None when the year is out of range."""
    if year < 1 or year > 9999:
        return None
    return datetime(year, month, 1, tzinfo=UTC)


def _last_n_days(expr: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    match = _LAST_N_DAYS.fullmatch(expr)
    if match is None:
        return None, None
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    # Deliberate difference from AutoMem: a negative N would give an inverted
    # window there; here it is simply not a recognised expression.
    if sign == "-" and digits != "0":
        return None, None
    if len(digits) > MAX_DAY_DIGITS:
        return _MIN_UTC, now
    try:
        start = now - timedelta(days=int(digits))
    except OverflowError:
        start = _MIN_UTC
    return start, now


def parse_time_expression(
    expr: str | None, now: datetime
) -> tuple[datetime | None, datetime | None]:
    """Map AutoMem's natural-language time expressions to a ``(start, end)`` window.

    ``now`` is the reference instant (converted to UTC); day/week/month/year
    boundaries fall on UTC midnight. Unknown expressions give ``(None, None)``.
    """
    if not isinstance(expr, str):
        return None, None
    text = expr.strip().lower()
    if not text:
        return None, None
    now = _to_utc(now)
    today = _midnight(now.date())

    if text in ("today", "this day"):
        return today, _shift(today, timedelta(days=1))
    if text == "yesterday":
        return _shift(today, timedelta(days=-1)), today
    if text in ("last 24 hours", "past 24 hours"):
        return _shift(now, timedelta(hours=-24)), now
    if text in ("last 48 hours", "past 48 hours"):
        return _shift(now, timedelta(hours=-48)), now
    if text == "this week":
        monday = _shift(today, timedelta(days=-today.weekday()))
        return monday, _shift(monday, timedelta(days=7))
    if text in ("last week", "past week"):
        monday = _shift(today, timedelta(days=-today.weekday()))
        return _shift(monday, timedelta(days=-7)), monday
    if text == "this month":
        start = _month_start(now.year, now.month)
        if now.month == 12:
            end = _month_start(now.year + 1, 1)
        else:
            end = _month_start(now.year, now.month + 1)
        return start, end if end is not None else _MAX_UTC
    if text in ("last month", "past month"):
        end = _month_start(now.year, now.month)
        if now.month == 1:
            start = _month_start(now.year - 1, 12)
        else:
            start = _month_start(now.year, now.month - 1)
        return (start if start is not None else _MIN_UTC), end
    if text in ("last year", "past year"):
        start = _month_start(now.year - 1, 1)
        return (start if start is not None else _MIN_UTC), _month_start(now.year, 1)
    if text == "this year":
        end = _month_start(now.year + 1, 1)
        # Matches AutoMem: in year 9999 there is no next January, so end = now.
        return _month_start(now.year, 1), end if end is not None else now
    if text.startswith("last ") and text.endswith(" days"):
        return _last_n_days(text, now)
    return None, None


def _is_absent(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def resolve_time_window(
    time_query: str | None,
    start: object = None,
    end: object = None,
    now: datetime | None = None,
) -> tuple[datetime | None, datetime | None]:
    """Window from ``time_query``, with explicit ``start``/``end`` overriding each half.

    ``start``/``end`` that are None or blank are treated as absent; anything
    else must parse (``ValidationError("Invalid start time: ...")`` otherwise).
    ``now`` defaults to the current time.
    """
    reference = _to_utc(now) if now is not None else datetime.now(UTC)
    window_start, window_end = parse_time_expression(time_query, reference)
    # Validate both explicit bounds before using either, so errors don't
    # depend on which half happens to be checked first.
    explicit_start = None if _is_absent(start) else parse_timestamp(start, field="start time")
    explicit_end = None if _is_absent(end) else parse_timestamp(end, field="end time")
    if explicit_start is not None:
        window_start = explicit_start
    if explicit_end is not None:
        window_end = explicit_end
    return window_start, window_end


def query_has_temporal_intent(q: str) -> bool:
    """True when the query asks about recency ("latest", "currently", ...)."""
    if not isinstance(q, str) or not q:
        return False
    return TEMPORAL_INTENT.search(q) is not None
