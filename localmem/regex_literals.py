"""Substrings a regular expression's every match must contain: a cheap test before the search.

``required_substrings(pattern)`` reads the pattern's parse tree and returns a set of plain
strings such that every match contains at least one of them, or None when it cannot say
(then the pattern must always be searched). A text containing none of them cannot match,
so ``str in`` checks (a fast substring scan) can rule a pattern out without running it;
a text containing one still needs the search. The classifier's rules (classify.py) start
with ``\\b``, which keeps ``re`` from skipping ahead to a likely start on its own.
"""

from __future__ import annotations

import re
from typing import Any

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_C = _sre_parse  # the op names (LITERAL, BRANCH, ...) are defined there
_ZERO_WIDTH = {_C.AT, _C.ASSERT, _C.ASSERT_NOT}
_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", None)} - {None}
# More alternatives than this is no longer a cheap test.
_MAX_ALTERNATIVES = 32


def required_substrings(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Strings of which every match of ``pattern`` contains one; None: no such test known.

    Only patterns without flags that change what a literal matches (IGNORECASE) are read."""
    if pattern.flags & re.IGNORECASE or not isinstance(pattern.pattern, str):
        return None
    try:
        tree = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # a parser of another Python version: no test rather than a wrong one
        return None
    found = _sequence(list(tree))
    return None if found is None else frozenset(found)


def _sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    """Every match of the items in a row contains each item's match, and the characters of
    consecutive literals together: the best of those (longest shortest member) is required."""
    candidates: list[set[str]] = []
    run: list[str] = []
    for op, value in items:
        if op is _C.LITERAL:
            run.append(chr(value))
            continue
        if run:
            candidates.append({"".join(run)})
            run = []
        if op in _ZERO_WIDTH:
            continue
        inner = _item(op, value)
        if inner is not None:
            candidates.append(inner)
    if run:
        candidates.append({"".join(run)})
    candidates = [c for c in candidates if c and "" not in c and len(c) <= _MAX_ALTERNATIVES]
    if not candidates:
        return None
    return max(candidates, key=lambda c: (min(map(len, c)), -len(c)))


def _item(op: Any, value: Any) -> set[str] | None:
    if op is _C.SUBPATTERN:
        if len(value) == 4 and value[1] & re.IGNORECASE:  # (?i:...): its literals match other cases
            return None
        return _sequence(list(value[-1]))
    if op is _C.BRANCH:
        union: set[str] = set()
        for branch in value[1]:
            found = _sequence(list(branch))
            if found is None:
                return None  # one alternative requires nothing known: the whole requires nothing
            union |= found
        return union
    if op in _REPEATS and value[0] >= 1:
        return _sequence(list(value[2]))
    return None
