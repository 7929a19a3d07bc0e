"""The time grammar's rule table: each rule a fixed token pattern and a small pure
function from the matched tokens and the clock to a ``Period``."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Callable


from .periods import (
    MAX_UTC,
    TICK,
    UTC,
    Clock,
    NoRule,
    NotUnderstood,
    Period,
    Trace,
    day_period,
    monday_of,
    shift_moment,
    unit_containing,
)
from .tokens import Token


# -- the rules: (name, pattern, function) ------------------------------------------------------
# A pattern is a tuple of matchers, one per token: "word|word" (literal words),
# or ":kind" — :num (any amount), :day (1-31), :year (four digits), :unit,
# :month, :weekday, :date, :isomonth.

Rule = tuple[str, tuple[str, ...], Callable[[Clock, list[Token]], Period]]


def _matches(matcher: str, token: Token) -> bool:
    if not matcher.startswith(":"):
        return token.kind in ("word", "unit", "to") and token.text in matcher.split("|")
    kind = matcher[1:]
    if kind == "day":
        return token.kind == "num" and len(token.text) <= 2 and token.value is not None \
            and 1 <= token.value <= 31
    if kind == "year":
        return token.kind == "num" and len(token.text) == 4 and not token.ordinal \
            and token.value is not None and token.value >= 1
    return token.kind == kind


# AutoMem's expressions, AutoMem's windows (closed at the next boundary).

def _today(clock: Clock, t: list[Token]) -> Period:
    return Period(clock.midnight(clock.today), clock.midnight(clock.today, 1), closed=True)


def _yesterday(clock: Clock, t: list[Token]) -> Period:
    return Period(clock.midnight(clock.today, -1), clock.midnight(clock.today), closed=True)


def _this_calendar(clock: Clock, t: list[Token]) -> Period:
    today, unit = clock.today, t[-1].value
    if unit == "week":
        monday = monday_of(clock, today)
        return Period(clock.midnight(monday), clock.midnight(monday, 7), closed=True)
    if unit == "month":
        return Period(clock.month_start(today.year, today.month),
                      clock.month_start(today.year, today.month + 1), closed=True)
    if today.year == 9999:  # AutoMem: no next January in year 9999, so the window ends now
        return Period(clock.month_start(today.year, 1), clock.now, closed=True)
    return Period(clock.month_start(today.year, 1), clock.month_start(today.year + 1, 1), closed=True)


def _previous_calendar(clock: Clock, t: list[Token]) -> Period:
    today, unit = clock.today, t[-1].value
    if unit == "week":
        monday = monday_of(clock, today)
        return Period(clock.midnight(monday, -7), clock.midnight(monday), closed=True)
    if unit == "month":
        return Period(clock.month_start(today.year, today.month - 1),
                      clock.month_start(today.year, today.month), closed=True)
    return Period(clock.month_start(today.year - 1, 1), clock.month_start(today.year, 1), closed=True)


def _last_amount(clock: Clock, t: list[Token]) -> Period:
    """last/past N units: rolling, ``[now - N units, now]`` (AutoMem's "last N days" included)."""
    return Period(shift_moment(clock.now, t[1].value, t[2].value), clock.now, closed=True)


def _last_single(clock: Clock, t: list[Token]) -> Period:
    """last/past hour, day, fortnight, minute: rolling, as with N = 1."""
    return Period(shift_moment(clock.now, 1, t[1].value), clock.now, closed=True)


# localmem's own calendar periods (end exclusive).

def _ago(clock: Clock, t: list[Token]) -> Period:
    """N units ago: the calendar unit holding ``now - N units`` ("3 days ago" is that day)."""
    amount, unit = t[0].value, t[1].value
    return unit_containing(clock, shift_moment(clock.now, amount, unit), unit)


def _earlier(clock: Clock, t: list[Token]) -> Period:
    """earlier today / earlier this week, month or year: from its start until now."""
    unit = "day" if t[-1].text == "today" else t[-1].value
    return Period(unit_containing(clock, clock.now, unit).start, clock.now, closed=True)


def _weekday(clock: Clock, t: list[Token]) -> Period:
    """friday: the latest Friday up to today (today when it is Friday)."""
    today = clock.today
    return day_period(clock, today - timedelta(days=(today.weekday() - t[-1].value) % 7))


def _last_weekday(clock: Clock, t: list[Token]) -> Period:
    """last friday: the latest Friday before today."""
    today = clock.today
    return day_period(clock, today - timedelta(days=(today.weekday() - t[-1].value - 1) % 7 + 1))


def _this_weekday(clock: Clock, t: list[Token]) -> Period:
    """this friday: the Friday of the current (ISO, Monday-first) week."""
    return day_period(clock, monday_of(clock, clock.today) + timedelta(days=t[-1].value))


def _weekend(clock: Clock, t: list[Token]) -> Period:
    """this weekend / last weekend: Saturday and Sunday of this or the previous ISO week;
    plain "weekend": the current one on a Saturday or Sunday, else the last one."""
    monday = monday_of(clock, clock.today)
    previous = t[0].text == "last" or (len(t) == 1 and clock.today.weekday() < 5)
    saturday = monday + timedelta(days=5 - (7 if previous else 0))
    return Period(clock.midnight(saturday), clock.midnight(saturday, 2))


def _month_span(clock: Clock, year: int, month: int) -> Period:
    return Period(clock.month_start(year, month), clock.month_start(year, month + 1))


def _month_name(clock: Clock, t: list[Token]) -> Period:
    """november: the latest November that has begun (this one while it lasts)."""
    today, month = clock.today, t[-1].value
    return _month_span(clock, today.year if month <= today.month else today.year - 1, month)


def _last_month_name(clock: Clock, t: list[Token]) -> Period:
    """last november: the latest November before the current month."""
    today, month = clock.today, t[-1].value
    return _month_span(clock, today.year if month < today.month else today.year - 1, month)


def _month_year(clock: Clock, t: list[Token]) -> Period:
    return _month_span(clock, t[1].value, t[0].value)


def _year(clock: Clock, t: list[Token]) -> Period:
    return Period(clock.month_start(t[0].value, 1), clock.month_start(t[0].value + 1, 1))


def _calendar_date(clock: Clock, year: int | None, month: int, day: int, text: str) -> Period:
    """A day by month and day; without a year, the latest such day up to today."""
    today = clock.today
    years = [year] if year is not None else range(today.year, max(0, today.year - 8), -1)
    for candidate in years:
        try:
            found = date(candidate, month, day)
        except ValueError:
            continue
        if year is not None or found <= today:
            return day_period(clock, found)
    raise NotUnderstood(f"{text!r} is not a date")


def _month_day(clock: Clock, t: list[Token]) -> Period:
    month, day = (t[0], t[1]) if t[0].kind == "month" else (t[1], t[0])
    year = t[2].value if len(t) == 3 else None
    return _calendar_date(clock, year, month.value, day.value, " ".join(x.text for x in t))


def _iso_date(clock: Clock, t: list[Token]) -> Period:
    """2026-11-27: that day; with a time, the minute (or hour, second, instant) it names."""
    from dateutil.parser import isoparse  # here: its import costs every new process ~25 ms

    text = t[0].text
    try:
        parsed = isoparse(text.upper())
    except (ValueError, OverflowError):
        raise NotUnderstood(f"{text!r} is not a valid ISO date") from None
    if len(text) == 10:
        return day_period(clock, parsed.date())
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=clock.tz)
    try:
        start = parsed.astimezone(UTC)
    except OverflowError:
        raise NotUnderstood(f"{text!r} is outside the calendar") from None
    clock_part = re.split(r"[t ]", text, maxsplit=1)[1]
    digits = re.sub(r"[^0-9]", "", re.split(r"[z+-]", clock_part, maxsplit=1)[0])
    step = {2: timedelta(hours=1), 4: timedelta(minutes=1), 6: timedelta(seconds=1)}.get(len(digits), TICK)
    try:
        return Period(start, start + step)
    except OverflowError:
        return Period(start, MAX_UTC)


def _iso_month(clock: Clock, t: list[Token]) -> Period:
    year, month = (int(part) for part in t[0].text.split("-"))
    if not 1 <= month <= 12 or year < 1:
        raise NotUnderstood(f"{t[0].text!r} is not a valid ISO month")
    return _month_span(clock, year, month)


def _before_last(clock: Clock, t: list[Token]) -> Period:
    """the week/month/year before last: the calendar unit two back; the day before yesterday."""
    unit = t[0].value
    two_back = shift_moment(unit_containing(clock, clock.now, unit).start, 2, unit)
    return unit_containing(clock, two_back, unit)


def _this_past(clock: Clock, t: list[Token]) -> Period:
    """this past week/month/year/day: rolling, the last one of them up to now (not the calendar unit)."""
    return Period(shift_moment(clock.now, 1, t[-1].value), clock.now, closed=True)


def _this_past_weekend(clock: Clock, t: list[Token]) -> Period:
    return _weekend(clock, [Token("word", "last")])


# Parts of a day, in hours from midnight: generous, since a window is a hard filter.
DAY_PARTS = {"morning": (0, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}


def _day_part(clock: Clock, t: list[Token]) -> Period:
    """this morning, yesterday evening, tonight, last night (18:00 to 06:00), afternoon (today's)."""
    word = "evening" if t[-1].text == "tonight" else t[-1].text
    back = 1 if t[0].text in ("yesterday", "last") else 0
    first, last = DAY_PARTS[word]
    midnight = clock.midnight(clock.today, -back)
    return Period(midnight + timedelta(hours=first), midnight + timedelta(hours=last))


_PART_DAYS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}


def _part_of_month(clock: Clock, t: list[Token]) -> Period:
    """early/mid/late November: days 1-10, 11-20, 21 to the end (of the latest November begun)."""
    month = t[1].value
    today = clock.today
    year = t[2].value if len(t) == 3 else (today.year if month <= today.month else today.year - 1)
    first, last = _PART_DAYS[t[0].text]
    span = _month_span(clock, year, month)
    start = clock.midnight(date(year, month, first)) if year >= 1 else span.start
    end = span.end if last == 31 or year < 1 else clock.midnight(date(year, month, last), 1)
    return Period(start, end)


def _quarter(clock: Clock, t: list[Token]) -> Period:
    """Q3: July to September of the latest third quarter begun; Q3 2026 / 2026 Q3: that year's."""
    number = next(x for x in t if x.kind == "num" and len(x.text) < 4)
    if number.value not in (1, 2, 3, 4):
        raise NotUnderstood(f"'q{number.text}' is not a quarter (q1 to q4)")
    first_month = 3 * number.value - 2
    year_token = next((x for x in t if x.kind == "num" and len(x.text) == 4), None)
    today = clock.today
    year = year_token.value if year_token else (today.year if first_month <= today.month else today.year - 1)
    return Period(clock.month_start(year, first_month), clock.month_start(year, first_month + 3))


def _numeric_date(clock: Clock, t: list[Token]) -> Period:
    """27/11/2026, 11/27/2026, 27.11.2026: day and month told apart by the one above 12; when
    both are 12 or less, '.' reads day.month (its convention) and '/' reads day/month with a note."""
    text = t[0].text
    separator = "." if "." in text else "/"
    first, second, year = (int(part) for part in text.split(separator))
    note = None
    if first > 12 or separator == "." or first == second:
        day, month = first, second
    elif second > 12:
        month, day = first, second
    else:
        day, month = first, second
        note = (f"{text!r} could be day/month or month/day; it was read as day/month "
                f"({date(year, month, day).strftime('%d %B %Y') if year >= 1 else text}); write "
                f"{year:04d}-{first:02d}-{second:02d} for the other reading")
    period = _calendar_date(clock, year, month, day, text)
    return Period(period.start, period.end, period.closed, note)


PERIOD_RULES: list[Rule] = [
    ("today", ("today",), _today),
    ("today", ("this", "day"), _today),
    ("yesterday", ("yesterday",), _yesterday),
    ("this week/month/year", ("this", ":unit"), _this_calendar),
    ("last week/month/year", ("last|past", ":unit"), _previous_calendar),
    ("last N units", ("last|past", ":num", ":unit"), _last_amount),
    ("last hour/day/fortnight", ("last|past", ":unit"), _last_single),
    ("N units ago", (":num", ":unit", "ago|back"), _ago),
    ("unit before last", (":unit", "before", "last"), _before_last),
    ("day before yesterday", ("day", "before", "yesterday"), _before_last),
    ("this past unit", ("this", "past", ":unit"), _this_past),
    ("this past weekend", ("this", "past", "weekend"), _this_past_weekend),
    ("part of a day", ("this|yesterday", "morning|afternoon|evening"), _day_part),
    ("part of a day", ("morning|afternoon|evening|tonight",), _day_part),
    ("last night", ("last|yesterday", "night"), _day_part),
    ("part of a month", ("early|mid|late", ":month"), _part_of_month),
    ("part of a month", ("early|mid|late", ":month", ":year"), _part_of_month),
    ("quarter", ("q", ":num"), _quarter),
    ("quarter year", ("q", ":num", ":year"), _quarter),
    ("year quarter", (":year", "q", ":num"), _quarter),
    ("numeric date", (":numdate",), _numeric_date),
    ("earlier today", ("earlier", "today"), _earlier),
    ("earlier this week/month/year", ("earlier", "this", ":unit"), _earlier),
    ("weekday", (":weekday",), _weekday),
    ("last weekday", ("last|past", ":weekday"), _last_weekday),
    ("this weekday", ("this", ":weekday"), _this_weekday),
    ("weekend", ("weekend",), _weekend),
    ("this/last weekend", ("this|last|past", "weekend"), _weekend),
    ("month", (":month",), _month_name),
    ("last month name", ("last|past", ":month"), _last_month_name),
    ("month year", (":month", ":year"), _month_year),
    ("month day", (":month", ":day"), _month_day),
    ("day month", (":day", ":month"), _month_day),
    ("month day year", (":month", ":day", ":year"), _month_day),
    ("day month year", (":day", ":month", ":year"), _month_day),
    ("year", (":year",), _year),
    ("ISO date", (":date",), _iso_date),
    ("ISO month", (":isomonth",), _iso_month),
]


def _rule_applies(name: str, tokens: list[Token]) -> bool:
    """Unit restrictions the pattern language does not express."""
    unit = next((t for t in tokens if t.kind == "unit"), None)
    if name in ("this week/month/year", "last week/month/year", "earlier this week/month/year"):
        return unit is not None and not unit.plural and unit.value in ("week", "month", "year")
    if name in ("unit before last", "this past unit"):
        return unit is not None and not unit.plural and unit.value in ("day", "week", "month", "year")
    if name == "last hour/day/fortnight":
        return unit is not None and not unit.plural and unit.value in ("minute", "hour", "day", "fortnight")
    return True


def match_period(clock: Clock, tokens: list[Token], trace: Trace) -> Period:
    """The period the first matching rule makes of ``tokens`` (its name and note go into ``trace``)."""
    for name, pattern, build in PERIOD_RULES:
        if len(pattern) == len(tokens) and all(_matches(m, t) for m, t in zip(pattern, tokens)) \
                and _rule_applies(name, tokens):
            trace.rules.append(name)
            period = build(clock, tokens)
            if period.note:
                trace.notes.append(period.note)
            return period
    raise NoRule()


def why_not(tokens: list[Token]) -> str:
    if not tokens:
        return "it names no time"
    unknown = [t.text for t in tokens if t.kind in ("word", "junk")
               and t.text not in ("a", "an", "last", "past", "this", "ago", "earlier", "today", "yesterday",
                                  "weekend", "since", "after", "before", "between", "and", "from")]
    if unknown:
        words = ", ".join(repr(w) for w in dict.fromkeys(unknown))
        return f"{words} {'is not a time word' if len(unknown) == 1 else 'are not time words'} localmem knows"
    phrase = " ".join(t.text for t in tokens)
    return f"{phrase!r} is not a time expression localmem knows"
