"""The time grammar's tokenizer: ISO dates and times, numbers, units, month and weekday
names, a time-zone offset and range words; filler words are dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta, timezone, tzinfo
from typing import Any

from .periods import UTC, NotUnderstood

# An amount with more significant digits than this reaches past year 1 from
# any date in any unit (timedelta holds at most 999,999,999 days): "last N
# days" then means all time, without turning thousands of digits into an int.
MAX_AMOUNT_DIGITS = 9


# -- tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # word, num, unit, month, weekday, date, numdate, isomonth, offset, to, junk
    text: str
    value: Any = None
    plural: bool = False  # units: "days" (plural) against "day"
    ordinal: bool = False  # numbers: "27th"


_ISO_TIME = (r"(?:t\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?"
             r"|[ ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)(?:z|[+-]\d{2}(?::?\d{2})?)?")
_SCANNER = re.compile(
    rf"(?P<date>\d{{4}}-\d{{2}}-\d{{2}}(?:{_ISO_TIME})?(?![\d:]))"
    r"|(?P<numdate>\d{1,2}(?P<datesep>[/.])\d{1,2}(?P=datesep)\d{4}(?![\d]))"
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
MONTHS = {name: n for n, names in enumerate((
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
RANGE_WORDS = {"to", "until", "till", "til", "through", "thru"}
PART_WORDS = {"early", "mid", "late"}  # "mid-november", "early 2026"
FEW = 3  # "the last few days": three of them
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
        elif kind == "word" and piece.partition("-")[0] in PART_WORDS:  # "mid-november": no range
            raw.extend(_word(part) for part in piece.split("-"))
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
    if word in MONTHS:
        return Token("month", word, MONTHS[word])
    if word in _WEEKDAYS:
        return Token("weekday", word, _WEEKDAYS[word])
    if word in _ZONE_WORDS:
        return Token("offset", word, UTC)
    if word in RANGE_WORDS:
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
        if (token.kind == "word" and token.value == "few" and following is not None
                and following.kind == "unit" and out and out[-1].text in ("last", "past")):
            out.append(Token("num", token.text, FEW))  # "last few days" (not "a few days ago": one day)
            continue
        previous = out[-1] if out else None
        if (token.kind == "num" and token.text in _SMALL_NUMBERS and 1 <= token.value <= 9
                and previous is not None and previous.kind == "num" and previous.text in _TENS):
            out[-1] = Token("num", f"{previous.text} {token.text}", previous.value + token.value)
            continue
        out.append(token)
    return out
