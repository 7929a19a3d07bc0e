"""The 10-component recall score, as small pure functions (AutoMem's _compute_metadata_score)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable

from ..config import Config
from ..timeparse import parse_timestamp
from .context import ContextProfile, context_bonus
from .late_interaction import token_score

_METADATA_TOKEN = re.compile(r"[a-z0-9_\-]+")
MAX_METADATA_TERM = 256
COMPONENT_KEYS = ("vector", "keyword", "metadata", "relation", "tag", "importance",
                  "confidence", "recency", "exact", "relevance")


# A cosine from float32 arithmetic may overshoot [-1, 1] by rounding; a value
# further out (or NaN/inf) comes from a vector damaged on disk, not a match.
COSINE_SLACK = 1e-3


def usable_cosine(value: Any) -> float | None:
    """A cosine read from SQL as a float in [-1, 1], or None when it is no usable evidence."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    cosine = float(value)
    if not math.isfinite(cosine) or abs(cosine) > 1.0 + COSINE_SLACK:
        return None
    return max(-1.0, min(1.0, cosine))


def parse_epoch(value: Any) -> float | None:
    """Seconds since the epoch of a stored timestamp; None when missing or unparseable."""
    if not value:
        return None
    if isinstance(value, str):
        return _epoch_of_text(value)
    try:
        return parse_timestamp(value).timestamp()
    except Exception:
        return None


@functools.lru_cache(maxsize=8192)
def _epoch_of_text(value: str) -> float | None:
    # Recency and the sort key parse each candidate's timestamp, every recall.
    try:
        return parse_timestamp(value).timestamp()
    except Exception:
        return None


def recency_score(timestamp: Any, now: datetime, window_days: float, curve: str) -> float:
    """1.0 for now or the future, decaying over the window (linear) or with it as half-life (exp)."""
    epoch = parse_epoch(timestamp)
    if epoch is None:
        return 0.0
    age_days = (now.timestamp() - epoch) / 86400.0
    if age_days <= 0:
        return 1.0
    if curve == "exp":
        return 0.5 ** (age_days / window_days)
    return max(0.0, 1.0 - age_days / window_days)


def metadata_terms(metadata: Any) -> set[str]:
    """Every short metadata string, lowercased whole and as tokens (key 'entities' skipped)."""
    terms: set[str] = set()
    pending = [metadata]  # a loop, not recursion: one call per candidate, every recall
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(item for key, item in value.items() if key != "entities")
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, str) and len(value) <= MAX_METADATA_TERM:
            terms.update(_string_terms(value))
    return terms


@functools.lru_cache(maxsize=8192)
def _string_terms(value: str) -> tuple[str, ...]:
    # Metadata values repeat across memories (speakers, sources, sessions):
    # lowercase and tokenise each one once.
    lowered = value.lower()
    return (lowered, *_METADATA_TOKEN.findall(lowered))


def tag_score(tokens: list[str], tags: Iterable[str], meta_terms: set[str], token_cap: int) -> float:
    """Share of query keywords equal to one of the memory's tags or metadata terms."""
    if not tokens:
        return 0.0
    terms = {t.lower() for t in tags} | meta_terms
    hits = sum(1 for token in tokens if token in terms)
    denominator = min(len(tokens), token_cap) if token_cap > 0 else len(tokens)
    return min(1.0, hits / denominator)


def exact_score(query: str, meta_terms: set[str]) -> float:
    """1.0 when the whole query equals a metadata string or token."""
    text = query.lower().strip()
    return 1.0 if text and text in meta_terms else 0.0


def keyword_component(match_type: str, match_score: float, keyword: float) -> float:
    """Trending results count their channel score (importance), as AutoMem does; others their keyword score."""
    if match_type == "trending":
        return min(1.0, max(0.0, match_score))
    return min(1.0, max(0.0, keyword))


@dataclass(frozen=True)
class ScoreInputs:
    """What the score of one candidate depends on."""

    match_type: str
    match_score: float
    similarity: float | None
    relation_score: float | None
    metadata_score: float
    memory: dict[str, Any]
    keyword: float = 0.0  # from recall/keywords.py
    centred: float | None = None  # cosine from the store's mean direction (recall/centering.py)
    token: float | None = None  # MaxSim over token codes (recall/late_interaction.py)


def score_candidate(inputs: ScoreInputs, query: str, tokens: list[str], now: datetime,
                    config: Config, profile: ContextProfile | None = None) -> tuple[float, dict[str, Any]]:
    """Final score and the score_components block for one candidate.

    ``profile`` (context hints) adds the unweighted context bonus.
    """
    memory = inputs.memory
    meta_terms = metadata_terms(memory.get("metadata") or {})
    bonus = context_bonus(profile, memory, meta_terms)
    # Token evidence, when the memory has codes, stands in for its cosine; the
    # centred cosine, when there is one, for the plain one.
    similarity = usable_cosine(inputs.centred if inputs.centred is not None else inputs.similarity)
    vector = max(0.0, similarity) if similarity is not None else 0.0
    if inputs.token is not None and math.isfinite(inputs.token):
        vector = token_score(inputs.token)
    keyword = keyword_component(inputs.match_type, inputs.match_score, inputs.keyword)
    metadata = _number(inputs.metadata_score)
    exact = exact_score(query, meta_terms)
    evidence = max(vector, keyword, metadata, exact)
    components: dict[str, Any] = {
        "vector": vector,
        "keyword": keyword,
        "metadata": metadata,
        "relation": _number(inputs.relation_score),
        "tag": tag_score(tokens, memory.get("tags") or [], meta_terms, config.tag_score_token_cap),
        "importance": _number(memory.get("importance")),
        "confidence": _number(memory.get("confidence")),
        "recency": recency_score(memory.get("timestamp"), now, config.recency_window_days,
                                 config.recency_curve),
        "exact": exact,
        "relevance": _number(memory.get("relevance_score")),
    }
    gated = False
    if tokens and config.relevance_gate > 0 and evidence < config.relevance_gate:
        factor = evidence / config.relevance_gate
        for key in ("importance", "confidence", "recency", "tag", "relevance"):
            components[key] *= factor
        gated = True
    weights = (config.weight_vector, config.weight_keyword, config.weight_metadata,
               config.weight_relation, config.weight_tag, config.weight_importance,
               config.weight_confidence, config.weight_recency, config.weight_exact,
               config.weight_relevance)  # in COMPONENT_KEYS order
    final = sum(components[k] * w for k, w in zip(COMPONENT_KEYS, weights)) + bonus
    if not math.isfinite(final):  # every component is finite: only a non-finite weight gets here
        final = 0.0
    components["context"] = bonus
    components["evidence"] = evidence
    components["relevance_gated"] = gated
    return final, components


def _number(value: Any) -> float:
    """A stored number (importance, confidence, relevance); 0.0 when missing or not finite."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0
