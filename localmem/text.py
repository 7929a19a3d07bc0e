"""Text helpers: keyword extraction, keyword scores, fingerprints and summaries.

These follow AutoMem's definitions (automem-behaviour.md §1.3, §1.13, §2.10)
so that scores stay comparable with the reference system.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = [
    "SEARCH_STOPWORDS",
    "content_tokens",
    "extract_keywords",
    "fingerprint",
    "generate_summary",
    "keyword_share",
    "plural",
    "substring_match_score",
    "visible",
]

SEARCH_STOPWORDS: frozenset[str] = frozenset(
    {
        "the", "and", "for", "with", "that", "this", "from", "into", "using",
        "have", "will", "your", "about", "after", "before", "when", "then",
        "than", "also", "just", "very", "more", "less", "over", "under",
    }
)

_KEYWORD_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")
_CONTENT_TOKEN = re.compile(r"\b[a-z0-9]+\b")
_FP_MARKUP = re.compile(r"[`*_#>~\-]")
_FP_NON_WORD = re.compile(r"[^\w\s]")
# The ASCII characters the fingerprint turns into spaces: markup and non-word characters.
_FP_SPACES = {code: " " for code in range(128)
              if _FP_MARKUP.match(chr(code)) or _FP_NON_WORD.match(chr(code))}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A period after these ends no sentence ("My physio is Dr. Patel."): AutoMem's split would cut
# the summary to "My physio is Dr.". Lowercased, without the period; single letters are initials.
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "mt", "no", "vs",
                            "etc", "e.g", "i.e", "approx", "dept", "inc", "ltd", "co", "jan", "feb",
                            "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"})

FINGERPRINT_LENGTH = 320
SUMMARY_MAX_CHARS = 240


def extract_keywords(text: str) -> list[str]:
    """Lowercased search keywords of ``text``: ≥ 3 chars, no stopwords, unique, in order."""
    seen: set[str] = set()
    keywords: list[str] = []
    for raw in _KEYWORD_TOKEN.findall((text or "").lower()):
        token = raw.strip("-_")
        if len(token) < 3 or token in SEARCH_STOPWORDS or token in seen:
            continue
        seen.add(token)
        keywords.append(token)
    return keywords


def content_tokens(text: str) -> set[str]:
    """The set of lowercase alphanumeric word tokens of ``text``."""
    return set(_CONTENT_TOKEN.findall((text or "").lower()))


def keyword_share(keywords: list[str], content: str) -> float:
    """Fraction of ``keywords`` that occur as whole tokens of ``content``.

    Hyphenated/underscored keywords can never match, exactly as in AutoMem,
    because content tokens are purely alphanumeric.
    """
    if not keywords:
        return 0.0
    tokens = content_tokens(content)
    hits = sum(1 for keyword in keywords if keyword in tokens)
    return hits / len(keywords)


def substring_match_score(query: str, content: str, tags: Iterable[str]) -> float:
    """AutoMem's keyword-channel score, normalised to [0, 1].

    Each keyword scores 2 if it is a substring of the content and 1 if it is a
    substring of any tag; the whole query (when ≥ 3 chars) scores the same as a
    phrase. The sum is divided by 3 per keyword plus 3 for the phrase.
    """
    normalized = (query or "").strip().lower()
    keywords = extract_keywords(normalized)
    phrase = normalized if len(normalized) >= 3 else ""
    max_points = 3 * len(keywords) + (3 if phrase else 0)
    if max_points == 0:
        return 0.0
    haystack = (content or "").lower()
    tag_texts = [tag.lower() for tag in tags or () if isinstance(tag, str)]

    def points(needle: str) -> int:
        score = 2 if needle in haystack else 0
        if any(needle in tag for tag in tag_texts):
            score += 1
        return score

    raw = sum(points(keyword) for keyword in keywords)
    if phrase:
        raw += points(phrase)
    return min(1.0, raw / max_points)


def fingerprint(text: str) -> str:
    """Normalised content key used to collapse near-identical results (§1.13): lowercased,
    non-ASCII dropped, markup and other non-word characters made spaces, whitespace
    collapsed, cut to FINGERPRINT_LENGTH."""
    # One translate over the ASCII text instead of two regex passes (recall takes the
    # fingerprint of every candidate, about 2.5x faster); the same result, as the
    # mapping is built from the patterns and they act on one character at a time.
    value = (text or "").lower().encode("ascii", "ignore").decode("ascii").translate(_FP_SPACES)
    return " ".join(value.split())[:FINGERPRINT_LENGTH]


def _first_sentence(text: str) -> str:
    """``text`` up to its first sentence end: AutoMem's split, but not after an abbreviation
    or an initial."""
    for end in _SENTENCE_END.finditer(text):
        before = text[:end.start()]
        tail = before.rsplit(None, 1)  # [] when before is only whitespace
        word = tail[-1] if tail else ""
        if before.endswith(".") and (word[:-1].lower() in _ABBREVIATIONS or
                                     (len(word) == 2 and word[0].isupper())):
            continue
        return before
    return text


def generate_summary(content: str) -> str:
    """First sentence of ``content``, cut at the last space within 240 chars if longer."""
    text = (content or "").strip()
    if not text:
        return ""
    first = _first_sentence(text)
    if len(first) <= SUMMARY_MAX_CHARS:
        return first
    # A space right at index 240 still gives a cut of exactly 240 chars.
    cut = first.rfind(" ", 0, SUMMARY_MAX_CHARS + 1)
    if cut <= 0:
        # One 240+ char word has no space to cut at; hard-cut instead.
        return first[:SUMMARY_MAX_CHARS]
    return first[:cut].rstrip()


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 memory"``, ``"2 memories"``, ``"0 edges"``: the count with the word in its number.

    ``many`` is the plural when it is not regular (``word`` + s, or -y to -ies,
    or + es after s, x, ch, sh).
    """
    if count == 1:
        return f"{count} {word}"
    if many is None:
        if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u", ""):
            many = word[:-1] + "ies"
        elif word.endswith(("s", "x", "ch", "sh")):
            many = word + "es"
        else:
            many = word + "s"
    return f"{count} {many}"


def visible(text: str) -> str:
    """Stored text as it may be shown on a terminal: control characters (an escape sequence that
    would restyle, clear or retitle it) become U+FFFD; spaces, tabs and format characters stay."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in " \t" or unicodedata.category(c) == "Cf" else "\ufffd"
                   for c in text)
