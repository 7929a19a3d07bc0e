"""Natural-language time expressions: a tokenizer and a small table of rules.

``read_time_expression(text, now)`` turns "last 2 weeks", "since monday",
"between 2026-11-01 and 2026-11-27" or "march 2025 utc+2" into a window, or
says why it cannot. The pieces:

1. ``tokenize`` (``tokens``): ISO dates and times, numbers (digits, ordinals, number words),
   units, month and weekday names, a time-zone offset, range words; filler
   words ("the", "in", "on", "of", ...) are dropped.
2. ``PERIOD_RULES`` (``rules``): each rule is a fixed token pattern and a small pure
   function from the matched tokens and the clock to a ``Period``.
3. ``_expression`` (here): the composition forms around periods — ``since P``,
   ``after P``, ``before P``, ``until P``, ``between P and Q``, ``P to Q``.

Every window is computed against the caller's ``now``. Day, week, month and
year boundaries fall on midnight in UTC, or in the fixed offset the
expression carries ("utc+2", "+05:30", "gmt-3"); ISO times with their own
offset keep it. AutoMem's own expressions (today, this day, yesterday, this/
last/past week, month and year, last N days/hours) give AutoMem's windows
exactly: their end is the next boundary itself. localmem's other calendar
periods end one microsecond before the next boundary, so that with the
inclusive bounds of the recall filter two neighbouring days never share an
instant. Rolling windows ("last 3 months") end at ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from .periods import MAX_UTC, MIN_UTC, TICK, UTC, Clock, NoRule, NotUnderstood, Trace
from .rules import PERIOD_RULES, match_period, why_not
from .tokens import RANGE_WORDS, Token, tokenize

__all__ = ["Reading", "read_time_expression", "tokenize", "PERIOD_RULES"]


# -- composition ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """What a time expression was understood as (or why it was not)."""

    expression: str
    start: datetime | None = None
    end: datetime | None = None
    timezone: str = "UTC"
    error: str | None = None
    rules: tuple[str, ...] = ()  # the period rules that matched, in order
    notes: tuple[str, ...] = ()  # readings chosen where the text allows more than one ("04/05/2026")

    @property
    def understood(self) -> bool:
        return self.error is None


def _zone_name(tz: tzinfo) -> str:
    offset = tz.utcoffset(None) or timedelta(0)
    if offset == timedelta(0):
        return "UTC"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _split_zone(tokens: list[Token]) -> tuple[list[Token], tzinfo]:
    zones = {t.value for t in tokens if t.kind == "offset"}
    if len(zones) > 1:
        raise NotUnderstood("it names more than one time-zone offset")
    return [t for t in tokens if t.kind != "offset"], (zones.pop() if zones else UTC)


def _split_at(tokens: list[Token], kinds: set[str], words: set[str]) -> tuple[list[Token], list[Token]] | None:
    """The tokens either side of the single separator token, or None."""
    found = [i for i, t in enumerate(tokens) if t.kind in kinds or (t.kind == "word" and t.text in words)]
    if len(found) != 1:
        return None
    i = found[0]
    return tokens[:i], tokens[i + 1:]


def _expression(clock: Clock, tokens: list[Token], trace: Trace
                ) -> tuple[datetime | None, datetime | None]:
    """The composition forms: between/from/since/after/before/until around periods."""
    head = tokens[0].text if tokens and tokens[0].kind in ("word", "to") else ""
    rest = tokens[1:]
    if head == "between":
        parts = _split_at(rest, set(), {"and"})
        if parts is None:
            raise NotUnderstood("'between' needs '... and ...'")
        return _range(clock, *parts, trace)
    if head == "from":
        parts = _split_at(rest, {"to"}, set())
        if parts is not None:
            return _range(clock, *parts, trace)
        period = match_period(clock, rest, trace)
        return period.start, period.last
    if head in ("since", "after", "before") or (head in RANGE_WORDS and tokens[0].kind == "to"):
        period = match_period(clock, rest, trace)
        if head == "since":
            return _checked(period.start, clock.now)
        if head == "after":
            return (period.end + TICK if period.closed and period.end not in (None, MAX_UTC)
                    else period.end), None
        if head == "before":
            return None, (period.start - TICK if period.start not in (None, MIN_UTC) else period.start)
        return None, period.last  # until / till / through
    parts = _split_at(tokens, {"to"}, set())
    if parts is not None and parts[0] and parts[1]:
        return _range(clock, *parts, trace)
    period = match_period(clock, tokens, trace)
    return period.start, period.last


def _range(clock: Clock, first: list[Token], second: list[Token], trace: Trace
           ) -> tuple[datetime | None, datetime | None]:
    return _checked(match_period(clock, first, trace).start, match_period(clock, second, trace).last)


def _checked(start: datetime | None, end: datetime | None) -> tuple[datetime | None, datetime | None]:
    if start is not None and end is not None and start > end:
        raise NotUnderstood("it ends before it starts")
    return start, end


def read_time_expression(text: str, now: datetime) -> Reading:
    """Read ``text`` against ``now`` (an aware datetime; naive is taken as UTC)."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    expression = " ".join(text.split())
    try:
        tokens, tz = _split_zone(tokenize(expression))
        if not tokens:
            raise NotUnderstood("it names no time")
        trace = Trace()
        start, end = _expression(Clock(now, tz), tokens, trace)
    except NoRule:
        return Reading(expression, error=why_not(tokens))
    except OverflowError:  # date arithmetic at the ends of the calendar (years 1 and 9999)
        return Reading(expression, error="it falls outside the calendar (before year 1 or after 9999)")
    except NotUnderstood as exc:
        return Reading(expression, error=str(exc))
    return Reading(expression, start, end, _zone_name(tz), rules=tuple(trace.rules), notes=tuple(trace.notes))
