"""The clock and periods of the time grammar: what a rule computes, and the calendar arithmetic.

Every boundary is computed against the caller's ``now`` in the clock's
offset; a moment past either end of the calendar is clamped to that end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo

from dateutil.relativedelta import relativedelta

UTC = timezone.utc
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
TICK = timedelta(microseconds=1)


class NotUnderstood(Exception):
    """The expression (or a part of it) names no window; the message says why."""


class NoRule(NotUnderstood):
    """No rule matches a group of tokens (the message is made for the whole expression)."""


@dataclass
class Trace:
    """What reading an expression used: the rules that matched and the notes their periods carry."""

    rules: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- the clock and periods ---------------------------------------------------------------------


@dataclass(frozen=True)
class Clock:
    """``now`` in UTC and the offset in which days begin."""

    now: datetime
    tz: tzinfo

    @property
    def today(self) -> date:
        try:
            return self.now.astimezone(self.tz).date()
        except OverflowError:
            return self.now.date()

    def midnight(self, day: date, shift: int = 0) -> datetime:
        """Midnight (in the clock's offset, as UTC) ``shift`` days after ``day``, clamped."""
        try:
            day = day + timedelta(days=shift)
        except OverflowError:
            return MAX_UTC if shift > 0 else MIN_UTC
        return _to_utc_clamped(datetime(day.year, day.month, day.day, tzinfo=self.tz))

    def month_start(self, year: int, month: int) -> datetime:
        """The first of a month at midnight; clamped before year 1 and after 9999."""
        year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
        if year < 1:
            return MIN_UTC
        if year > 9999:
            return MAX_UTC
        return _to_utc_clamped(datetime(year, month, 1, tzinfo=self.tz))


def _to_utc_clamped(local: datetime) -> datetime:
    """A local midnight as UTC; past either end of the calendar, that end."""
    try:
        return local.astimezone(UTC)
    except OverflowError:
        return MIN_UTC if local.year == 1 else MAX_UTC


@dataclass(frozen=True)
class Period:
    """``[start, end)``; ``closed`` makes ``end`` itself part of it (AutoMem's windows, rolling ones)."""

    start: datetime | None
    end: datetime | None
    closed: bool = False
    note: str | None = None  # which reading was taken, when the text allows more than one

    @property
    def last(self) -> datetime | None:
        """The last instant inside, for an inclusive upper bound."""
        if self.end is None or self.closed or self.end in (MIN_UTC, MAX_UTC):
            return self.end
        return self.end - TICK


def shift_moment(moment: datetime, amount: int | None, unit: str, sign: int = -1) -> datetime:
    """``moment`` moved by ``amount`` units (backwards by default), clamped to the calendar."""
    if amount is None:
        return MIN_UTC if sign < 0 else MAX_UTC
    step = {"minute": relativedelta(minutes=amount), "hour": relativedelta(hours=amount),
            "day": relativedelta(days=amount), "week": relativedelta(weeks=amount),
            "fortnight": relativedelta(weeks=2 * amount), "month": relativedelta(months=amount),
            "year": relativedelta(years=amount)}[unit]
    try:
        return moment - step if sign < 0 else moment + step
    except (OverflowError, ValueError):
        return MIN_UTC if sign < 0 else MAX_UTC


def monday_of(clock: Clock, day: date) -> date:
    return day - timedelta(days=day.weekday())


def day_period(clock: Clock, day: date) -> Period:
    return Period(clock.midnight(day), clock.midnight(day, 1))


def unit_containing(clock: Clock, moment: datetime, unit: str) -> Period:
    """The calendar minute/hour/day/week/month/year (in the clock's offset) holding ``moment``."""
    try:
        if moment in (MIN_UTC, MAX_UTC):
            raise OverflowError
        local = moment.astimezone(clock.tz)
    except OverflowError:
        raise NotUnderstood("it falls outside the calendar (before year 1 or after 9999)") from None
    if unit in ("minute", "hour"):
        local = local.replace(second=0, microsecond=0, **({} if unit == "minute" else {"minute": 0}))
        start = local.astimezone(UTC)
        return Period(start, shift_moment(start, 1, unit, sign=1))
    day = local.date()
    if unit == "day":
        return day_period(clock, day)
    if unit in ("week", "fortnight"):
        monday = monday_of(clock, day)
        return Period(clock.midnight(monday), clock.midnight(monday, 7))
    if unit == "month":
        return Period(clock.month_start(day.year, day.month), clock.month_start(day.year, day.month + 1))
    return Period(clock.month_start(day.year, 1), clock.month_start(day.year + 1, 1))
