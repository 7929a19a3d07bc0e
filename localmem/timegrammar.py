"""Natural-language time expressions: a tokenizer and a small table of rules.

``read_time_expression(text, now)`` turns "last 2 weeks", "since monday",
"between 2026-11-01 and 2026-11-27" or "march 2025 utc+2" into a window, or
says why it cannot. The pieces:

1. ``tokenize``: ISO dates and times, numbers (digits, ordinals, number words),
   units, month and weekday names, a time-zone offset, range words; filler
   words ("the", "in", "on", "of", ...) are dropped.
2. ``PERIOD_RULES``: each rule is a fixed token pattern and a small pure
   function from the matched tokens and the clock to a ``Period``.
3. ``_expression``: the composition forms around periods — ``since P``,
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

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Any, Callable

from dateutil.parser import isoparse
from dateutil.relativedelta import relativedelta

__all__ = ["Reading", "read_time_expression", "tokenize", "PERIOD_RULES"]

UTC = timezone.utc
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
TICK = timedelta(microseconds=1)
# An amount with more significant digits than this reaches past year 1 from
# any date in any unit (timedelta holds at most 999,999,999 days): "last N
# days" then means all time, without turning thousands of digits into an int.
MAX_AMOUNT_DIGITS = 9


class NotUnderstood(Exception):
    """The expression (or a part of it) names no window; the message says why."""


class NoRule(NotUnderstood):
    """No rule matches a group of tokens (the message is made for the whole expression)."""


# -- tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # word, num, unit, month, weekday, date, isomonth, offset, to, junk
    text: str
    value: Any = None
    plural: bool = False  # units: "days" (plural) against "day"
    ordinal: bool = False  # numbers: "27th"


_ISO_TIME = (r"(?:t\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?"
             r"|[ ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)(?:z|[+-]\d{2}(?::?\d{2})?)?")
_SCANNER = re.compile(
    rf"(?P<date>\d{{4}}-\d{{2}}-\d{{2}}(?:{_ISO_TIME})?(?![\d:]))"
    r"|(?P<isomonth>\d{4}-\d{2}(?![\d-]))"
    r"|(?P<offset>(?:utc|gmt)\s*[+-]\s*\d{1,2}(?::?\d{2})?(?!\d)|(?<![\w])[+-]\d{2}:?\d{2}(?![\d-]))"
    r"|(?P<num>\d+)(?P<suffix>st|nd|rd|th)?(?![\d])"
    r"|(?P<word>[a-z]+(?:-[a-z]+)*)"
    r"|(?P<to>\.\.|/|-|\u2013|\u2014)"
    r"|(?P<skip>[\s,.;:!?()\"']+)"
    r"|(?P<junk>.)",
    re.DOTALL | re.ASCII,
)

_UNITS = {
    "minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute",
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "h": "hour",
    "day": "day", "days": "day", "d": "day",
    "week": "week", "weeks": "week", "wk": "week", "wks": "week", "w": "week",
    "fortnight": "fortnight", "fortnights": "fortnight",
    "month": "month", "months": "month", "mo": "month", "mos": "month",
    "year": "year", "years": "year", "yr": "year", "yrs": "year", "y": "year",
}
_PLURAL_UNITS = {"minutes", "mins", "hours", "hrs", "days", "weeks", "wks", "fortnights", "months",
                 "mos", "years", "yrs"}
_MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for name in names}
_WEEKDAYS = {name: n for n, names in enumerate((
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"),
    ("thursday", "thu", "thur", "thurs"), ("friday", "fri"), ("saturday", "sat"),
    ("sunday", "sun"))) for name in names}
_SMALL_NUMBERS = {word: n for n, word in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen"))}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_RANGE_WORDS = {"to", "until", "till", "til", "through", "thru"}
# Words that add nothing to the window: "in the last 3 days", "on friday", "during march".
_FILLERS = {"the", "in", "on", "of", "during", "within", "over", "for", "at", "around"}
_ZONE_WORDS = {"utc", "gmt", "z"}


def _number_word(word: str) -> int | None:
    """"seven" -> 7, "twenty-one" -> 21; None for anything else."""
    if word in _SMALL_NUMBERS:
        return _SMALL_NUMBERS[word]
    if word in _TENS:
        return _TENS[word]
    tens, _, unit = word.partition("-")
    if tens in _TENS and _SMALL_NUMBERS.get(unit, 0) in range(1, 10):
        return _TENS[tens] + _SMALL_NUMBERS[unit]
    return None


def _offset(text: str) -> tzinfo:
    """"utc+2", "gmt-05:30", "+0200" -> a fixed offset."""
    body = re.sub(r"^(?:utc|gmt)|\s", "", text)
    sign = -1 if body[0] == "-" else 1
    digits = body[1:].replace(":", "")
    hours, minutes = (int(digits), 0) if len(digits) <= 2 else (int(digits[:-2]), int(digits[-2:]))
    if hours > 23 or minutes > 59:
        raise NotUnderstood(f"{text!r} is not a time-zone offset")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _number(digits: str, suffix: str | None) -> Token:
    significant = digits.lstrip("0") or "0"
    # None stands for "more than any date range": see MAX_AMOUNT_DIGITS.
    value = int(significant) if len(significant) <= MAX_AMOUNT_DIGITS else None
    return Token("num", digits, value, ordinal=bool(suffix))


def tokenize(text: str) -> list[Token]:
    """The tokens of a lowercased expression, fillers dropped, number words as numbers."""
    raw: list[Token] = []
    for match in _SCANNER.finditer(text.lower()):
        kind = match.lastgroup
        piece = match.group(0)
        if kind == "skip":
            continue
        if kind == "suffix":  # the named group inside num
            kind = "num"
        if kind == "num":
            raw.append(_number(match.group("num"), match.group("suffix")))
        elif kind == "offset":
            raw.append(Token("offset", piece, _offset(piece)))
        elif kind == "word" and "-" in piece and _number_word(piece) is None:
            for n, part in enumerate(piece.split("-")):  # "mon-fri": a range
                raw.extend(([Token("to", "-")] if n else []) + [_word(part)])
        elif kind == "word":
            raw.append(_word(piece))
        else:
            raw.append(Token(kind or "junk", piece))
    return _combine(raw)


def _word(word: str) -> Token:
    if word in _UNITS:
        return Token("unit", word, _UNITS[word], plural=word in _PLURAL_UNITS)
    if word in _MONTHS:
        return Token("month", word, _MONTHS[word])
    if word in _WEEKDAYS:
        return Token("weekday", word, _WEEKDAYS[word])
    if word in _ZONE_WORDS:
        return Token("offset", word, UTC)
    if word in _RANGE_WORDS:
        return Token("to", word)
    number = _number_word(word)
    if number is not None:
        return Token("num", word, number)
    return Token("word", word, word)


def _combine(tokens: list[Token]) -> list[Token]:
    """Drop fillers; "twenty one" -> 21; "a"/"an" before a unit -> 1; "(a) couple" -> 2."""
    out: list[Token] = []
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.kind == "word" and token.value in _FILLERS:
            continue
        if token.kind == "word" and token.value in ("a", "an"):
            if following is not None and following.kind == "unit":
                out.append(Token("num", token.text, 1))
            elif following is not None and following.kind == "word" and following.value == "couple":
                continue
            else:
                out.append(token)
            continue
        if token.kind == "word" and token.value == "couple":
            out.append(Token("num", token.text, 2))
            continue
        previous = out[-1] if out else None
        if (token.kind == "num" and token.text in _SMALL_NUMBERS and 1 <= token.value <= 9
                and previous is not None and previous.kind == "num" and previous.text in _TENS):
            out[-1] = Token("num", f"{previous.text} {token.text}", previous.value + token.value)
            continue
        out.append(token)
    return out


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

    @property
    def last(self) -> datetime | None:
        """The last instant inside, for an inclusive upper bound."""
        if self.end is None or self.closed or self.end in (MIN_UTC, MAX_UTC):
            return self.end
        return self.end - TICK


def _shift(moment: datetime, amount: int | None, unit: str, sign: int = -1) -> datetime:
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


def _monday(clock: Clock, day: date) -> date:
    return day - timedelta(days=day.weekday())


def _day(clock: Clock, day: date) -> Period:
    return Period(clock.midnight(day), clock.midnight(day, 1))


def _unit_containing(clock: Clock, moment: datetime, unit: str) -> Period:
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
        return Period(start, _shift(start, 1, unit, sign=1))
    day = local.date()
    if unit == "day":
        return _day(clock, day)
    if unit in ("week", "fortnight"):
        monday = _monday(clock, day)
        return Period(clock.midnight(monday), clock.midnight(monday, 7))
    if unit == "month":
        return Period(clock.month_start(day.year, day.month), clock.month_start(day.year, day.month + 1))
    return Period(clock.month_start(day.year, 1), clock.month_start(day.year + 1, 1))


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
        monday = _monday(clock, today)
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
        monday = _monday(clock, today)
        return Period(clock.midnight(monday, -7), clock.midnight(monday), closed=True)
    if unit == "month":
        return Period(clock.month_start(today.year, today.month - 1),
                      clock.month_start(today.year, today.month), closed=True)
    return Period(clock.month_start(today.year - 1, 1), clock.month_start(today.year, 1), closed=True)


def _last_amount(clock: Clock, t: list[Token]) -> Period:
    """last/past N units: rolling, ``[now - N units, now]`` (AutoMem's "last N days" included)."""
    return Period(_shift(clock.now, t[1].value, t[2].value), clock.now, closed=True)


def _last_single(clock: Clock, t: list[Token]) -> Period:
    """last/past hour, day, fortnight, minute: rolling, as with N = 1."""
    return Period(_shift(clock.now, 1, t[1].value), clock.now, closed=True)


# localmem's own calendar periods (end exclusive).

def _ago(clock: Clock, t: list[Token]) -> Period:
    """N units ago: the calendar unit holding ``now - N units`` ("3 days ago" is that day)."""
    amount, unit = t[0].value, t[1].value
    return _unit_containing(clock, _shift(clock.now, amount, unit), unit)


def _earlier(clock: Clock, t: list[Token]) -> Period:
    """earlier today / earlier this week, month or year: from its start until now."""
    unit = "day" if t[-1].text == "today" else t[-1].value
    return Period(_unit_containing(clock, clock.now, unit).start, clock.now, closed=True)


def _weekday(clock: Clock, t: list[Token]) -> Period:
    """friday: the latest Friday up to today (today when it is Friday)."""
    today = clock.today
    return _day(clock, today - timedelta(days=(today.weekday() - t[-1].value) % 7))


def _last_weekday(clock: Clock, t: list[Token]) -> Period:
    """last friday: the latest Friday before today."""
    today = clock.today
    return _day(clock, today - timedelta(days=(today.weekday() - t[-1].value - 1) % 7 + 1))


def _this_weekday(clock: Clock, t: list[Token]) -> Period:
    """this friday: the Friday of the current (ISO, Monday-first) week."""
    return _day(clock, _monday(clock, clock.today) + timedelta(days=t[-1].value))


def _weekend(clock: Clock, t: list[Token]) -> Period:
    """this weekend / last weekend: Saturday and Sunday of this or the previous ISO week;
    plain "weekend": the current one on a Saturday or Sunday, else the last one."""
    monday = _monday(clock, clock.today)
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
            return _day(clock, found)
    raise NotUnderstood(f"{text!r} is not a date")


def _month_day(clock: Clock, t: list[Token]) -> Period:
    month, day = (t[0], t[1]) if t[0].kind == "month" else (t[1], t[0])
    year = t[2].value if len(t) == 3 else None
    return _calendar_date(clock, year, month.value, day.value, " ".join(x.text for x in t))


def _iso_date(clock: Clock, t: list[Token]) -> Period:
    """2026-11-27: that day; with a time, the minute (or hour, second, instant) it names."""
    text = t[0].text
    try:
        parsed = isoparse(text.upper())
    except (ValueError, OverflowError):
        raise NotUnderstood(f"{text!r} is not a valid ISO date") from None
    if len(text) == 10:
        return _day(clock, parsed.date())
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


PERIOD_RULES: list[Rule] = [
    ("today", ("today",), _today),
    ("today", ("this", "day"), _today),
    ("yesterday", ("yesterday",), _yesterday),
    ("this week/month/year", ("this", ":unit"), _this_calendar),
    ("last week/month/year", ("last|past", ":unit"), _previous_calendar),
    ("last N units", ("last|past", ":num", ":unit"), _last_amount),
    ("last hour/day/fortnight", ("last|past", ":unit"), _last_single),
    ("N units ago", (":num", ":unit", "ago"), _ago),
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
    if name == "last hour/day/fortnight":
        return unit is not None and not unit.plural and unit.value in ("minute", "hour", "day", "fortnight")
    return True


def _period(clock: Clock, tokens: list[Token], used: list[str]) -> Period:
    """The period the first matching rule makes of ``tokens`` (its name goes into ``used``)."""
    for name, pattern, build in PERIOD_RULES:
        if len(pattern) == len(tokens) and all(_matches(m, t) for m, t in zip(pattern, tokens)) \
                and _rule_applies(name, tokens):
            used.append(name)
            return build(clock, tokens)
    raise NoRule()


def _why_not(tokens: list[Token]) -> str:
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


def _expression(clock: Clock, tokens: list[Token], used: list[str]
                ) -> tuple[datetime | None, datetime | None]:
    """The composition forms: between/from/since/after/before/until around periods."""
    head = tokens[0].text if tokens and tokens[0].kind in ("word", "to") else ""
    rest = tokens[1:]
    if head == "between":
        parts = _split_at(rest, set(), {"and"})
        if parts is None:
            raise NotUnderstood("'between' needs '... and ...'")
        return _range(clock, *parts, used)
    if head == "from":
        parts = _split_at(rest, {"to"}, set())
        if parts is not None:
            return _range(clock, *parts, used)
        period = _period(clock, rest, used)
        return period.start, period.last
    if head in ("since", "after", "before") or (head in _RANGE_WORDS and tokens[0].kind == "to"):
        period = _period(clock, rest, used)
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
        return _range(clock, *parts, used)
    period = _period(clock, tokens, used)
    return period.start, period.last


def _range(clock: Clock, first: list[Token], second: list[Token], used: list[str]
           ) -> tuple[datetime | None, datetime | None]:
    return _checked(_period(clock, first, used).start, _period(clock, second, used).last)


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
        used: list[str] = []
        start, end = _expression(Clock(now, tz), tokens, used)
    except NoRule:
        return Reading(expression, error=_why_not(tokens))
    except OverflowError:  # date arithmetic at the ends of the calendar (years 1 and 9999)
        return Reading(expression, error="it falls outside the calendar (before year 1 or after 9999)")
    except NotUnderstood as exc:
        return Reading(expression, error=str(exc))
    return Reading(expression, start, end, _zone_name(tz), rules=tuple(used))
