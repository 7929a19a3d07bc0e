"""Context hints for recall: language detection, the context profile and its bonus.

Implements automem-behaviour.md §1.6. A request's ``context``, ``language``,
``active_path``, ``context_tags``, ``context_types`` and ``priority_ids`` are
folded into one immutable :class:`ContextProfile`. The profile then gives each
candidate an unweighted ``context_bonus`` (added to the final score) and
decides whether matching memories must be injected into the results.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import PurePath
from types import MappingProxyType
from typing import Any, ClassVar

from ..tags import MAX_TAG_LENGTH

__all__ = [
    "CONTEXT_STYLE_KEYWORDS",
    "DEFAULT_STYLE_PRIORITY_TAGS",
    "EXTENSION_LANGUAGE_MAP",
    "LANGUAGE_ALIASES",
    "ContextProfile",
    "build_context_profile",
    "context_bonus",
    "context_priority_block",
    "context_tag_hit",
    "detect_language",
    "hint_tokens",
    "matches_context_priority",
    "needs_injection",
]

# Insertion order matters: a query naming two languages resolves to the first
# language of this mapping that it mentions (AutoMem iterates the same way).
LANGUAGE_ALIASES: Mapping[str, frozenset[str]] = MappingProxyType({
    "python": frozenset({"python", "py"}),
    "typescript": frozenset({"typescript", "ts", "tsx"}),
    "javascript": frozenset({"javascript", "js", "jsx"}),
    "go": frozenset({"go", "golang"}),
    "rust": frozenset({"rust"}),
    "java": frozenset({"java"}),
    "csharp": frozenset({"csharp", "c#", "cs"}),
    "cpp": frozenset({"c++", "cpp", "cc", "cxx"}),
    "swift": frozenset({"swift"}),
})

EXTENSION_LANGUAGE_MAP: Mapping[str, str] = MappingProxyType({
    ".py": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".cs": "csharp",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".swift": "swift",
})

CONTEXT_STYLE_KEYWORDS: frozenset[str] = frozenset({
    "style", "styles", "guideline", "guidelines", "pep8", "formatting", "lint",
    "preference", "preferences",
})

DEFAULT_STYLE_PRIORITY_TAGS: frozenset[str] = frozenset({
    "coding-style", "style", "style-guide", "preferences", "preference:coding",
})

STYLE_PRIORITY_TYPES: frozenset[str] = frozenset({"Style", "Preference"})

_HINT_TOKEN = re.compile(r"[a-z0-9_\-+#.]+")
_TAG_SEPARATORS = re.compile(r"[:/]+")


def hint_tokens(text: str | None) -> set[str]:
    """Lowercased tokens of ``text`` as used for language and style hints.

    Tokens keep ``_ - + # .`` so that ``c++`` and ``c#`` survive; a side effect
    (as in AutoMem) is that ``python.`` at the end of a sentence is not ``python``.
    """
    return set(_HINT_TOKEN.findall((text or "").lower()))


def _language_for_name(name: str | None) -> str | None:
    """The language whose key or alias equals ``name`` (case-insensitive), else None."""
    candidate = (name or "").strip().lower()
    if not candidate:
        return None
    for language, aliases in LANGUAGE_ALIASES.items():
        if candidate == language or candidate in aliases:
            return language
    return None


def _language_for_path(active_path: str | None) -> str | None:
    """The language of a file path's extension (lowercased suffix), else None."""
    if not active_path or not active_path.strip():
        return None
    return EXTENSION_LANGUAGE_MAP.get(PurePath(active_path.strip()).suffix.lower())


def detect_language(explicit: str | None, context_label: str, query: str,
                    active_path: str | None) -> str | None:
    """The request's programming language, first match wins.

    Order: the explicit ``language`` naming a language or alias; the whole
    ``context`` label naming one; the ``active_path`` extension; finally any
    query token that is an alias (so the English word "go" selects Go).
    """
    for found in (_language_for_name(explicit), _language_for_name(context_label),
                  _language_for_path(active_path)):
        if found:
            return found
    tokens = hint_tokens(query)
    for language, aliases in LANGUAGE_ALIASES.items():
        if tokens & aliases:
            return language
    return None


@dataclass(frozen=True)
class ContextProfile:
    """The soft-priority profile of one recall request (§1.6)."""

    TAG_WEIGHT: ClassVar[float] = 0.45
    TYPE_WEIGHT: ClassVar[float] = 0.25
    KEYWORD_WEIGHT: ClassVar[float] = 0.2
    ANCHOR_WEIGHT: ClassVar[float] = 0.9

    language: str | None
    context_label: str
    priority_tags: frozenset[str]
    priority_types: frozenset[str]
    priority_ids: tuple[str, ...]
    priority_keywords: frozenset[str]
    style_focus: bool


def _clean(values: Iterable[str] | None) -> list[str]:
    """Stripped, non-empty strings of ``values``."""
    return [v.strip() for v in values or () if isinstance(v, str) and v.strip()]


def build_context_profile(*, query: str, context: str, language: str | None,
                          active_path: str | None, context_tags: Sequence[str],
                          context_types: Sequence[str],
                          priority_ids: Sequence[str]) -> ContextProfile | None:
    """Fold the request's context hints into a profile; None when nothing applies.

    A detected language L adds the tags L, ``L-style`` and ``L:style``, the
    keyword L, and turns on style focus; style keywords in the context or the
    query also turn it on. Style focus adds the default style tags and the
    types Style and Preference; otherwise a non-empty context label is itself
    a priority tag.
    """
    label = (context or "").strip().lower()
    tags = {t.lower() for t in _clean(context_tags)}
    types = {t.title() for t in _clean(context_types)}
    ids = tuple(dict.fromkeys(_clean(priority_ids)))
    keywords: set[str] = set()

    detected = detect_language(language, label, query or "", active_path)
    style_focus = detected is not None
    if detected:
        tags |= {detected, f"{detected}-style", f"{detected}:style"}
        keywords.add(detected)
    if (hint_tokens(label) | hint_tokens(query)) & CONTEXT_STYLE_KEYWORDS:
        style_focus = True
    if style_focus:
        tags |= DEFAULT_STYLE_PRIORITY_TAGS
        types |= STYLE_PRIORITY_TYPES
    elif label:
        tags.add(label)

    if not (tags or types or ids or keywords):
        return None
    return ContextProfile(
        language=detected,
        context_label=label,
        priority_tags=frozenset(tags),
        priority_types=frozenset(types),
        priority_ids=ids,
        priority_keywords=frozenset(keywords),
        style_focus=style_focus,
    )


def _canonicalised(tag: str) -> str:
    return _TAG_SEPARATORS.sub(":", tag.strip().lower())


# Every candidate's tags are compared with the priority tags on every recall: the same few
# strings, so each is worked out once; only up to a stored tag's length, so that the
# cache's memory stays bounded whatever a request's context tags hold.
_canonical_short_tag = functools.lru_cache(maxsize=4096)(_canonicalised)


def _canonical_tag(tag: str) -> str:
    return _canonical_short_tag(tag) if len(tag) <= MAX_TAG_LENGTH else _canonicalised(tag)


def _tag_matches(tag: str, priority: str) -> bool:
    """Equal, ``tag`` starts with ``priority``, or ``priority`` inside ``tag``."""
    return bool(priority) and (tag == priority or tag.startswith(priority) or priority in tag)


def context_tag_hit(tag: str, priority: str) -> bool:
    """Whether a memory tag hits a priority tag for the scoring bonus.

    Both sides are lowercased and runs of ``:`` / ``/`` become one ``:``, so
    ``python/style`` hits ``python:style``. Then: equal, prefix or substring.
    An empty priority tag never hits.
    """
    return _tag_matches(_canonical_tag(tag), _canonical_tag(priority))


def _memory_tags(memory: Mapping[str, Any]) -> list[str]:
    """The memory's string tags, stripped and lowercased (empties dropped)."""
    return [t.strip().lower() for t in memory.get("tags") or () if isinstance(t, str) and t.strip()]


def _memory_type(memory: Mapping[str, Any]) -> str | None:
    value = memory.get("type")
    return value.strip().title() if isinstance(value, str) and value.strip() else None


def context_bonus(profile: ContextProfile | None, memory: Mapping[str, Any],
                  metadata_terms: Set[str]) -> float:
    """The unweighted context bonus of one memory (0.0 without a profile).

    +0.45 once if any tag hits any priority tag (:func:`context_tag_hit`),
    +0.25 if the memory's type (title-cased) is a priority type,
    +0.2 if any priority keyword (the language) is one of ``metadata_terms``,
    +0.9 if the memory's id is a priority id.

    The keyword test looks at metadata terms only, as AutoMem does and as §1.6
    states ("language keyword present among metadata terms"); tags are already
    rewarded by the tag part, so a ``python`` tag is not counted twice. A
    caller that wants tags to count as keywords too can pass
    ``metadata_terms | lowercased_tags``.
    """
    if profile is None:
        return 0.0
    bonus = 0.0
    if profile.priority_tags:  # context_tag_hit over every pair, each side canonicalised once
        priorities = [_canonical_tag(p) for p in profile.priority_tags]
        tags = [_canonical_tag(tag) for tag in _memory_tags(memory)]
        if any(_tag_matches(tag, p) for tag in tags for p in priorities):
            bonus += ContextProfile.TAG_WEIGHT
    if _memory_type(memory) in profile.priority_types:
        bonus += ContextProfile.TYPE_WEIGHT
    if profile.priority_keywords & metadata_terms:
        bonus += ContextProfile.KEYWORD_WEIGHT
    memory_id = str(memory.get("id") or "").strip()
    if memory_id and memory_id in profile.priority_ids:
        bonus += ContextProfile.ANCHOR_WEIGHT
    return bonus


def _result_id(result: Mapping[str, Any]) -> str:
    memory = result.get("memory") or {}
    return str(result.get("id") or memory.get("id") or "").strip()


def matches_context_priority(profile: ContextProfile, result: Mapping[str, Any]) -> bool:
    """Whether a result satisfies the profile for the injection decision.

    True when its id is a priority id, its type a priority type, or one of its
    tags equals, starts with or contains a priority tag. Unlike the scoring
    bonus, separators are NOT canonicalised here (``python/style`` does not
    match ``python:style``), as in AutoMem.
    """
    memory = result.get("memory") or {}
    result_id = _result_id(result)
    if result_id and result_id in profile.priority_ids:
        return True
    if any(_tag_matches(tag, p) for tag in _memory_tags(memory) for p in profile.priority_tags):
        return True
    return _memory_type(memory) in profile.priority_types


def needs_injection(profile: ContextProfile | None, top_results: Sequence[Mapping[str, Any]]) -> bool:
    """Whether priority memories must be injected into these top results.

    True when some priority id is missing from them, or none of them
    matches the profile (:func:`matches_context_priority`).
    """
    if profile is None:
        return False
    present = {_result_id(r) for r in top_results}
    if any(pid not in present for pid in profile.priority_ids):
        return True
    return not any(matches_context_priority(profile, r) for r in top_results)


def context_priority_block(profile: ContextProfile, injected: bool) -> dict[str, Any]:
    """The response's ``context_priority`` block: tags sorted (first 10), types sorted."""
    return {
        "language": profile.language,
        "context": profile.context_label,
        "priority_tags": sorted(profile.priority_tags)[:10],
        "priority_types": sorted(profile.priority_types),
        "injected": injected,
    }
