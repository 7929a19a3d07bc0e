"""Random strings a regular expression's parse tree describes: candidate matches of a pattern.

``sample(pattern, rng)`` walks the pattern's parse tree (``re._parser``) choosing a branch, a
repeat count and a character of each class at random; zero-width items (``\\b``, lookarounds) are
not enforced (a lookahead's groups are sampled, so a backreference to one repeats it: the atomic-group idiom
``(?=(?P<x>…))(?P=x)``), so a sample may not match: callers search it (``pattern.search``) and use what is
found. ``mangle_case`` swaps letters for other cases and for the non-ASCII characters a
case-ignoring pattern takes for them (İ ı ſ K). Used by tests/test_redact_prefilter.py (every
match holds a rule's prefilter strings) and benchmarks/speed/redaction_cost.py (strings built to
stress each rule's quantifiers).
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_C = _sre_parse
_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", None)} - {None}
_ZERO_WIDTH = {_C.AT, _C.ASSERT, _C.ASSERT_NOT}
# Characters a class is drawn from: printable ASCII, a few controls and some non-ASCII letters.
POOL = "".join(map(chr, range(32, 127))) + "\t\n\x00\u00e9\u00df\u0130\u0131\u017f\u212a\u03a3\u4e2d\U0001f600"
_CATEGORIES = {
    _C.CATEGORY_DIGIT: re.compile(r"\d"), _C.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    _C.CATEGORY_SPACE: re.compile(r"\s"), _C.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    _C.CATEGORY_WORD: re.compile(r"\w"), _C.CATEGORY_NOT_WORD: re.compile(r"\W"),
}
EXTRA_REPEATS = 12  # an unbounded repeat takes at most its minimum and this many more


def sample(pattern: re.Pattern[str], rng: random.Random) -> str:
    """A random string along ``pattern``'s parse tree (it may fail a zero-width test)."""
    return _sequence(list(_sre_parse.parse(pattern.pattern, pattern.flags)), rng, {})


def _in_class(items: list[tuple[Any, Any]], char: str) -> bool:
    negate = False
    found = False
    for op, value in items:
        if op is _C.NEGATE:
            negate = True
        elif op is _C.LITERAL:
            found |= ord(char) == value
        elif op is _C.RANGE:
            found |= value[0] <= ord(char) <= value[1]
        elif op is _C.CATEGORY:
            found |= bool(_CATEGORIES[value].match(char))
    return found != negate


@functools.lru_cache(maxsize=512)
def class_members(items: tuple[tuple[Any, Any], ...]) -> str:
    """The characters of ``POOL`` a class (an ``IN`` item's list, as a tuple) holds."""
    return "".join(c for c in POOL if _in_class(list(items), c))


def _sequence(items: list[tuple[Any, Any]], rng: random.Random, groups: dict[int, str]) -> str:
    return "".join(_item(op, value, rng, groups) for op, value in items)


def _item(op: Any, value: Any, rng: random.Random, groups: dict[int, str]) -> str:
    if op is _C.LITERAL:
        return chr(value)
    if op is _C.NOT_LITERAL:
        return rng.choice([c for c in POOL if ord(c) != value])
    if op is _C.ANY:
        return rng.choice(POOL.replace("\n", ""))
    if op is _C.IN:
        return rng.choice(class_members(tuple(value)) or "?")
    if op is _C.BRANCH:
        return _sequence(list(rng.choice(value[1])), rng, groups)
    if op is _C.SUBPATTERN:
        text = _sequence(list(value[-1]), rng, groups)
        if value[0]:
            groups[value[0]] = text
        return text
    if op is getattr(_C, "ATOMIC_GROUP", None):
        return _sequence(list(value), rng, groups)
    if op in _REPEATS:
        low, high, inner = value
        high = min(high, low + EXTRA_REPEATS)
        return "".join(_sequence(list(inner), rng, groups) for _ in range(rng.randint(low, high)))
    if op is _C.GROUPREF:
        return groups.get(value, "")
    if op is _C.ASSERT and value[0] == 1:  # a lookahead: its groups sampled (``(?=(?P<x>…))(?P=x)``), nothing written
        _sequence(list(value[1]), rng, groups)
        return ""
    if op in _ZERO_WIDTH:
        return ""
    raise ValueError(f"no sample for the regex item {op}")


# What a case-ignoring pattern takes for each ASCII letter besides its other case.
_OTHER_CASES = {"i": "I\u0130\u0131", "s": "S\u017f", "k": "K\u212a"}


def mangle_case(text: str, rng: random.Random) -> str:
    """``text`` with each letter, at random, kept, in its other case, or (i, s, k) a non-ASCII twin."""
    out = []
    for char in text:
        lower = char.lower()
        choices = char + (_OTHER_CASES.get(lower, char.swapcase()) if char.isascii() and char.isalpha() else "")
        out.append(rng.choice(choices))
    return "".join(out)
