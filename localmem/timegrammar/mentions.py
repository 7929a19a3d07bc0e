"""Calendar dates named inside free text: "what did I fix on 3 March 2025?".

``find_calendar_mention(text, now)`` looks for the longest span of a query
that the time grammar reads as a calendar period — a day, a month or a year,
with or without its year ("on 1 February, 2023", "in May 2023", "in July",
"2024-06-03") — and gives its window. With ``relative=True`` it also reads
the periods a phrase names relative to ``now`` that are over or under way
("last Friday", "two weeks ago", "in the past three months", "yesterday"),
as the window they make at ``now``. Composed phrases ("before May") are left
to ``time_query``: here a date is a hint about which memories a question is
about, never a filter.

A month named on its own is read only when it is written as a name
("in May", not "may I"; "may" and "march" need their capital unless a year
follows), a day
number only before a month ("3 March", "1st of May"), and a bare number only
as a year between 1900 and 2100, so ordinary words and counts are not taken
for dates.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from . import read_time_expression
from .tokens import MONTHS

# The period rules (rules.PERIOD_RULES) that name a calendar period by itself.
CALENDAR_RULES = frozenset({"month", "month year", "month day", "day month", "month day year",
                            "day month year", "year", "ISO date", "ISO month"})
_WITHOUT_YEAR = frozenset({"month", "month day", "day month"})
# The period rules that name a past period relative to now ("last Friday", "two weeks ago"):
# read with relative=True, as a window fixed by now (so they have their year).
RELATIVE_RULES = frozenset({"yesterday", "last week/month/year", "last N units", "last hour/day/fortnight",
                            "N units ago", "unit before last", "day before yesterday", "this past unit",
                            "this past weekend", "last weekday", "this/last weekend", "last month name"})
# Words a relative period begins with; "N units ago" begins at most this many words before "ago".
_RELATIVE_STARTS = frozenset({"yesterday", "last", "past", "this"})
_AGO_SPAN = 3
# A date is at most "the 1st of February, 2023": this many words from its first.
MAX_SPAN_WORDS = 5
# Words that can begin a date; a query with more of them than this is read only up to here
# (each costs a few readings of the grammar).
MAX_ANCHORS = 8
_WORDS = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|\d+(?:st|nd|rd|th)?|[^\W\d_]+")
_YEAR_OR_ISO = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")
_DAY = re.compile(r"\d{1,2}(?:st|nd|rd|th)?", re.IGNORECASE)
_FULL_MONTHS = frozenset(name for name in MONTHS if len(name) > 3 or name == "may")
# Month names that are also common words: read as months only when capitalised.
_WORD_MONTHS = frozenset({"may", "march", "mar"})
YEARS_READ_ALONE = (1900, 2100)
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class CalendarMention:
    """A calendar period a text names: its words, its window, whether it gave a year, and
    whether it was read relative to the request's "now" ("last Friday")."""

    expression: str
    start: datetime
    end: datetime
    has_year: bool
    relative: bool = False

    def days_from(self, when: datetime) -> float:
        """Days between ``when`` and the period (0 inside it). Without a year the period
        is taken in the year nearest ``when``: "in July" is about any July."""
        shifts = (0,) if self.has_year else (when.year - self.start.year - 1,
                                            when.year - self.start.year,
                                            when.year - self.start.year + 1)
        best = math.inf
        for shift in shifts:
            try:
                start = self.start.replace(year=self.start.year + shift)
                end = self.end.replace(year=self.end.year + shift)
            except ValueError:  # 29 February, or past the calendar's ends
                continue
            if start <= when <= end:
                return 0.0
            best = min(best, abs((when - start).total_seconds()), abs((when - end).total_seconds()))
        return best / SECONDS_PER_DAY

    def describe(self) -> dict[str, str | bool]:
        described: dict[str, str | bool] = {"expression": self.expression, "start": self.start.isoformat(),
                                            "end": self.end.isoformat(), "has_year": self.has_year}
        if self.relative:
            described["relative"] = True
        return described


def find_calendar_mention(text: str, now: datetime, relative: bool = False) -> CalendarMention | None:
    """The longest calendar period ``text`` names (the first of equal length), or None;
    ``relative``: when it names none, the longest past period it names relative to ``now``
    (RELATIVE_RULES: "last Friday on 23 January" is about the 23rd)."""
    return _longest(text, now, relative=False) or (_longest(text, now, relative=True) if relative else None)


def _longest(text: str, now: datetime, *, relative: bool) -> CalendarMention | None:
    words = list(_WORDS.finditer(text))
    best: CalendarMention | None = None
    best_length = 0
    anchors = 0
    for i, first in enumerate(words):
        if not (_is_relative_anchor(words, i) if relative
                else _is_anchor(first.group(0), words[i + 1].group(0) if i + 1 < len(words) else "")):
            continue
        anchors += 1
        if anchors > MAX_ANCHORS:
            break
        for j in range(min(len(words), i + MAX_SPAN_WORDS), i, -1):
            if j - i <= best_length:
                break
            mention = _read(text[first.start():words[j - 1].end()], now, first_word=i == 0, relative=relative)
            if mention is not None:
                best, best_length = mention, j - i
                break
    return best


def _is_anchor(word: str, following: str) -> bool:
    """Whether a date can begin at ``word``: a month name, a year or ISO date, or a day
    number followed by a month ("3 March", "1st of May")."""
    if word.lower() in MONTHS or _YEAR_OR_ISO.fullmatch(word):
        return True
    return _DAY.fullmatch(word) is not None and (following.lower() in MONTHS or following.lower() == "of")


def _is_relative_anchor(words: list[re.Match[str]], i: int) -> bool:
    """Whether a relative period can begin at word ``i``: "last", "past", "this (past)",
    "yesterday", or a word shortly before "ago" ("two weeks ago", "a month ago")."""
    return (words[i].group(0).lower() in _RELATIVE_STARTS
            or any(w.group(0).lower() == "ago" for w in words[i + 1:i + 1 + _AGO_SPAN]))


def _read(span: str, now: datetime, *, first_word: bool, relative: bool = False) -> CalendarMention | None:
    reading = read_time_expression(span, now)
    if not reading.understood or not reading.rules or reading.start is None or reading.end is None:
        return None
    if relative:  # a past period relative to now ("this weekend" on a Wednesday is not one)
        if not set(reading.rules) <= RELATIVE_RULES or reading.start > now:
            return None
        return CalendarMention(reading.expression, reading.start, reading.end, has_year=True, relative=True)
    if not set(reading.rules) <= CALENDAR_RULES:
        return None
    has_year = not set(reading.rules) <= _WITHOUT_YEAR
    word = span.split()[0]
    if word.lower() in _WORD_MONTHS and not word[:1].isupper() and not has_year:
        return None  # "it may on 3 occasions", "march on 5 fronts": the verbs ("may 2023" is a month)
    if reading.rules == ("month",):
        # "May I…", "june": a lone month only as a capitalised name, not opening the text.
        if first_word or not word[:1].isupper() or word.lower() not in _FULL_MONTHS:
            return None
    if reading.rules == ("year",) and not YEARS_READ_ALONE[0] <= reading.start.year <= YEARS_READ_ALONE[1]:
        return None
    return CalendarMention(reading.expression, reading.start, reading.end, has_year)
