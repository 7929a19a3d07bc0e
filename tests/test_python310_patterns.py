"""localmem runs on Python 3.10 (pyproject's requires-python), whose ``re`` has no atomic groups
``(?>…)`` and no possessive repeats (``*+``, ``{0,60}+``): a pattern holding one is an error at
import there. Every compiled pattern a localmem module keeps (in its globals, or in the tuples,
lists, dicts and dataclasses there, as the redaction rules are kept) is read here for them; the
idiom that works on both is a lookahead holding a group and a backreference to it,
``(?=(?P<x>…))(?P=x)``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re

import pytest

import localmem

try:
    from re import _parser as sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10 reads none of them
    import sre_parse  # type: ignore[no-redef]

NEWER = {getattr(sre_parse, name) for name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT") if hasattr(sre_parse, name)}


def _patterns(value, depth=0):
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _patterns(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns(item, depth + 1)
    elif depth < 3 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _patterns(getattr(value, field.name), depth + 1)


def _newer_items(items) -> list[str]:
    """The 3.11-only items of a parse tree, nested ones too (a group's, a repeat's, a branch's)."""
    found = []
    for op, value in items:
        if op in NEWER:
            found.append(str(op))
        for part in value if isinstance(value, (tuple, list)) else (value,):
            for sub in part if isinstance(part, list) else (part,):
                if isinstance(sub, sre_parse.SubPattern):
                    found += _newer_items(sub)
    return found


def _module_patterns() -> dict[str, re.Pattern[str]]:
    kept = {}
    for info in pkgutil.walk_packages(localmem.__path__, "localmem."):
        if info.name.endswith("__main__"):  # runs the CLI when imported
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra not installed: its patterns are read where it is
            continue
        for name, value in vars(module).items():
            for number, pattern in enumerate(_patterns(value)):
                if isinstance(pattern.pattern, str):
                    kept[f"{info.name}.{name}[{number}]"] = pattern
    return kept


@pytest.mark.skipif(not NEWER, reason="this Python's re has neither construct")
def test_no_kept_pattern_needs_python_311():
    patterns = _module_patterns()
    assert len(patterns) > 100  # the redaction rules, the classifier's, the time grammar's...
    newer = {where: found for where, pattern in patterns.items()
             if (found := _newer_items(sre_parse.parse(pattern.pattern, pattern.flags)))}
    assert not newer, newer


@pytest.mark.skipif(not NEWER, reason="this Python's re has neither construct")
def test_the_check_finds_both_constructs():
    for text in (r"(?>ab|a)c", r"x{0,60}+y", r"(?:a(?=(?P<t>b*+)))?"):
        assert _newer_items(sre_parse.parse(text)), text
    assert not _newer_items(sre_parse.parse(r"(?=(?P<x>[a-z]{0,60}))(?P=x)(?![a-z])"))
