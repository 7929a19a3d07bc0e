"""``relevance``: the probability that one recalled memory is relevant to the query.

Recall always fills its limit, so a rank says nothing about whether anything
relevant is stored. Each result of ``recall`` and ``recall_v1`` carries
``relevance``, a logistic model over evidence the search already has for it
(no extra embedding or query), each input a function of the query and that
memory (``keyword`` also of the word statistics it is weighed by), never of
another memory's score, so that it means the same on any store: a memory's
relevance does not fall because a competitor was superseded.

- ``cosine``: its raw cosine to the query vector;
- ``coverage``: the share of the query's keywords found in its content
  (``keyword_coverage``);
- ``token``: its vector component (the late-interaction MaxSim mapped to
  [0, 1], else its cosine clipped at 0);
- ``keyword``: the keyword channel's evidence, its BM25 divided by the BM25
  of a memory holding every searched term once (an IDF-weighted coverage in
  [0, 1]; 0 when no searched word matches);
- ``reciprocal_rank``: 1 / its place in the answer ordered by the ranking's
  score (1 for the first; ties share the better place). The one input read
  within the answer: removing a competitor (superseding it, a smaller scope)
  can only raise it, never lower it.
- ``cosine_over_kth`` and ``unseen_terms``: the prompt against the whole scope
  (recall/prompt_signals.py): its cosine less the scope's 10th best for the query,
  and the IDF-weighted share of the query's keywords nothing in scope contains. Both
  can only rise when a competitor goes.

The coefficients and the floor are data (``localmem/models/relevance.json``),
fitted by ``benchmarks/quality/relevance_calibration.py`` on two kinds of conversation
(LoCoMo: people talking; LongMemEval: a person and an assistant) with
all-MiniLM-L6-v2, the floor chosen on held-out folds. With another embedder the
cosine terms mean something else; keyword coverage then carries most of the
signal (a hash embedder's unrelated cosines are near 0, an exact text's 1).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable, Mapping

from ..errors import ConfigError

FEATURES = ("cosine", "coverage", "token", "keyword", "reciprocal_rank", "cosine_over_kth", "unseen_terms")
# Read from the whole scope by ``recall`` (recall/prompt_signals.py); ``recall_v1`` does not compute them.
PROMPT_INPUTS = ("cosine_over_kth", "unseen_terms")
MODEL_RESOURCE = "relevance.json"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A query keyword matches a content word when equal, or when the keyword (longer than
# this) less its last 3 characters, at least this many kept, begins the word
# ("decide" / "decided", "running" / "runs").
STEM_PREFIX = 4
MAX_CONTENT_WORDS = 4096  # a memory's first words only: bounded work per result
# Words that place a question in time rather than name its topic ("what did we decide
# last week"): the memories of that week need not contain them, so coverage leaves them out.
TIME_WORDS = frozenset("""
last next this past ago recent recently lately earlier later before after since until
today yesterday tomorrow tonight morning afternoon evening night weekend
day days week weeks month months year years hour hours minute minutes
monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
when
""".split())


@dataclass(frozen=True)
class RelevanceModel:
    """A logistic model: ``sigmoid(intercept + Σ coefficient · feature)``, and the floor."""

    intercept: float
    coefficients: tuple[float, ...]  # in FEATURES order
    floor: float  # the calibrated default floor (Config.relevance_floor overrides)
    calibrated_for: str = "all-MiniLM-L6-v2"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RelevanceModel":
        weights = data["coefficients"]
        # An input a file does not name weighs nothing: a model fitted before it existed still loads.
        coefficients = tuple(float(weights.get(name, 0.0)) for name in FEATURES)
        intercept, floor = float(data["intercept"]), float(data["floor"])
        if not all(math.isfinite(v) for v in (intercept, floor, *coefficients)) or not 0.0 <= floor <= 1.0:
            raise ValueError("relevance model: coefficients must be finite and the floor in [0, 1]")
        return cls(intercept, coefficients, floor, str(data.get("calibrated_for", "")))

    def probability(self, features: Mapping[str, float]) -> float:
        """The model's probability for one result's features; always finite, in [0, 1]."""
        z = self.intercept
        for name, weight in zip(FEATURES, self.coefficients):
            value = features.get(name, 0.0)
            z += weight * (value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0)
        z = max(-60.0, min(60.0, z))
        return 1.0 / (1.0 + math.exp(-z))


@functools.lru_cache(maxsize=1)
def packaged_model() -> RelevanceModel:
    """The coefficients shipped with localmem (read once per process)."""
    text = resources.files("localmem.models").joinpath(MODEL_RESOURCE).read_text(encoding="utf-8")
    return RelevanceModel.from_dict(json.loads(text))


def _finite(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    value = float(value)
    return value if math.isfinite(value) else default


def _stem_match(term: str, words: frozenset[str], prefixes: frozenset[str]) -> bool:
    if term in words:
        return True
    return len(term) > STEM_PREFIX and term[:max(STEM_PREFIX, len(term) - 3)] in prefixes


@functools.lru_cache(maxsize=4096)
def _content_words(content: str) -> tuple[frozenset[str], frozenset[str]]:
    """A content's words (its first MAX_CONTENT_WORDS) and their prefixes of STEM_PREFIX
    characters or more, read once per content: recall returns the same memories again."""
    words = frozenset(_WORD.findall(content.lower())[:MAX_CONTENT_WORDS])
    prefixes = frozenset(w[:n] for w in words for n in range(STEM_PREFIX, len(w)))
    return words, prefixes


def keyword_coverage(terms: Iterable[str], content: Any) -> float:
    """The share of the query's keywords (recall.keywords.query_terms) found in ``content``
    as words (or the same word with another ending). Every keyword counts once: no word is
    weighed by its form (a capitalised name once counted more, which read one dataset's
    "Speaker: text" turns rather than what a memory says)."""
    counted = _prepared_terms(tuple(terms))
    if not counted or not isinstance(content, str) or not content:
        return 0.0
    words, prefixes = _content_words(content)
    found = sum(1 for parts in counted if parts and all(_stem_match(p, words, prefixes) for p in parts))
    return found / len(counted)


@functools.lru_cache(maxsize=256)
def _prepared_terms(terms: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Each counted keyword's words; read once per query, not once per result. Time words
    are left out unless the query has nothing else. A keyword with no word characters
    still counts in the share, but can match nothing (all() of no parts would say it did)."""
    terms = tuple(t for t in terms if t)
    topical = tuple(t for t in terms if t.lower() not in TIME_WORDS and not t.isdigit())
    return tuple(tuple(_WORD.findall(term.lower())) for term in topical or terms)


def relevance_features(*, cosine: Any, coverage: Any, token: Any, keyword: Any = 0.0,
                       reciprocal_rank: Any = 0.0, cosine_over_kth: Any = 0.0,
                       unseen_terms: Any = 0.0) -> dict[str, float]:
    """The model's inputs for one result, every one finite (missing or damaged evidence is 0)."""
    return {
        "cosine": round(max(-1.0, min(1.0, _finite(cosine))), 6),
        "coverage": round(min(1.0, max(0.0, _finite(coverage))), 6),
        "token": round(min(1.0, max(0.0, _finite(token))), 6),
        "keyword": round(min(1.0, max(0.0, _finite(keyword))), 6),
        "reciprocal_rank": round(min(1.0, max(0.0, _finite(reciprocal_rank))), 6),
        "cosine_over_kth": round(max(-1.0, min(1.0, _finite(cosine_over_kth))), 6),
        "unseen_terms": round(min(1.0, max(0.0, _finite(unseen_terms))), 6),
    }


def reciprocal_ranks(scores: list[Any]) -> list[float]:
    """1 / each result's place when the answer is ordered by ``scores`` (highest first); equal scores
    share the better place, and a missing or non-finite score counts as the lowest."""
    values = [_finite(s, -math.inf) for s in scores]
    ordered = sorted(values, reverse=True)
    first_place = {}
    for place, value in enumerate(ordered, 1):
        first_place.setdefault(value, place)
    return [1.0 / first_place[v] for v in values]


def relevance_of(features: Mapping[str, float], model: RelevanceModel | None = None) -> float:
    """``relevance`` for one result: the packaged model's probability, rounded to 4 places."""
    return round((model or packaged_model()).probability(features), 4)


def relevance_floor(config: Any) -> float:
    """The floor in use: ``Config.relevance_floor`` when set, else the packaged model's."""
    floor = getattr(config, "relevance_floor", None)
    if floor is None:
        return packaged_model().floor
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
        raise ConfigError(f"relevance_floor must be a number in [0, 1], got {floor!r}")
    return float(floor)


def passes_relevance_floor(result: Mapping[str, Any], floor: float) -> bool:
    """Whether a recall or recall_v1 result's ``relevance`` clears ``floor`` (a hook
    injects only these). A result without a finite ``relevance`` never does."""
    value = result.get("relevance")
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= floor)


def summary(results: list[Mapping[str, Any]], floor: float) -> dict[str, Any]:
    """The response-level part of ``confidence``: the best result's relevance, whether it
    clears the floor, the floor, and how many results clear it."""
    values = [r["relevance"] for r in results if isinstance(r.get("relevance"), (int, float))]
    top = max(values) if values else 0.0
    return {"relevance": round(top, 4), "relevant": bool(values) and top >= floor,
            "relevance_floor": floor, "relevant_count": sum(1 for v in values if v >= floor)}


# ``level`` from the best relevance: below half the floor "none", below the floor
# "low", below HIGH "moderate", else "high".
HIGH = 0.9


def level_of(relevance: float, floor: float) -> str:
    if relevance >= max(floor, HIGH):
        return "high"
    if relevance >= floor:
        return "moderate"
    if relevance >= floor / 2:
        return "low"
    return "none"
