"""The 10-component recall score, as small pure functions (AutoMem's _compute_metadata_score)."""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import AbstractSet as Set, Any, Iterable

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
    if type(value) is float and -1.0 - COSINE_SLACK <= value <= 1.0 + COSINE_SLACK:
        return max(-1.0, min(1.0, value))  # the usual case, twice per candidate (NaN fails the test)
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
        # The stored form (UTC with its offset) straight away: an aware datetime's
        # timestamp does not depend on its zone, so converting it first changes nothing.
        stamp = datetime.fromisoformat(value)
        if stamp.tzinfo is not None and stamp.utcoffset() is not None:
            return stamp.timestamp()
    except ValueError:
        pass
    try:
        return parse_timestamp(value).timestamp()
    except Exception:
        return None


def recency_score(timestamp: Any, now: datetime, window_days: float, curve: str) -> float:
    """1.0 for now or the future, decaying over the window (linear) or with it as half-life (exp)."""
    return _recency(parse_epoch(timestamp), now.timestamp(), window_days, curve)


def _recency(epoch: float | None, now_epoch: float, window_days: float, curve: str) -> float:
    if epoch is None:
        return 0.0
    age_days = (now_epoch - epoch) / 86400.0
    if age_days <= 0:
        return 1.0
    if curve == "exp":
        return 0.5 ** (age_days / window_days)
    return max(0.0, 1.0 - age_days / window_days)


def metadata_terms(metadata: Any) -> set[str]:
    """Every short metadata string, lowercased whole and as tokens (key 'entities' skipped)."""
    terms: set[str] = set()
    if isinstance(metadata, dict):  # the usual flat dict of strings, without the general walk
        pending = []
        for key, value in metadata.items():
            if key == "entities":
                continue
            if isinstance(value, str):
                if len(value) <= MAX_METADATA_TERM:
                    terms.update(_string_terms(value))
            else:
                pending.append(value)
    else:
        pending = [metadata]
    while pending:  # a loop, not recursion: one call per candidate, every recall
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


@functools.lru_cache(maxsize=8192)
def metadata_terms_of_text(text: str) -> frozenset[str]:
    """``metadata_terms`` of a memory's stored metadata JSON (what to_record parses): the
    same memories come back recall after recall, so each text is read once."""
    return frozenset(metadata_terms(json.loads(text) if text else {}))


@functools.lru_cache(maxsize=8192)
def lowered_tags_of_text(text: str) -> frozenset[str] | None:
    """The lowercased tags of a memory's stored tags JSON; None when it is not a list of strings."""
    tags = json.loads(text) if text else []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return None
    return frozenset(t.lower() for t in tags)


def tag_score(tokens: list[str], tags: Iterable[str], meta_terms: Set[str], token_cap: int) -> float:
    """Share of query keywords equal to one of the memory's tags or metadata terms."""
    if not tokens:
        return 0.0
    return lowered_tag_score(tokens, {t.lower() for t in tags}, meta_terms, token_cap)


def lowered_tag_score(tokens: list[str], lowered: Set[str], meta_terms: Set[str], token_cap: int) -> float:
    """``tag_score`` with the memory's tags already lowercased."""
    if not tokens:
        return 0.0
    hits = len([token for token in tokens if token in lowered or token in meta_terms])
    denominator = min(len(tokens), token_cap) if token_cap > 0 else len(tokens)
    return min(1.0, hits / denominator)


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
    return CandidateScorer(query, tokens, now, config, profile).score(
        inputs.match_type, inputs.match_score, inputs.similarity, inputs.relation_score,
        inputs.metadata_score, inputs.memory, inputs.keyword, inputs.centred, inputs.token)


class CandidateScorer:
    """``score_candidate`` for the many candidates of one query: what depends only on
    the query, the clock and the configuration is worked out once, not per candidate
    (recall scores about a hundred candidates per query)."""

    def __init__(self, query: str, tokens: list[str], now: datetime, config: Config,
                 profile: ContextProfile | None = None) -> None:
        self.query_text = query.lower().strip()
        self.tokens = tokens
        self.now_epoch = now.timestamp()
        self.config = config
        self.profile = profile
        self.token_cap = config.tag_score_token_cap
        self.gate = config.relevance_gate if tokens and config.relevance_gate > 0 else None
        self.weights = (config.weight_vector, config.weight_keyword, config.weight_metadata,
                        config.weight_relation, config.weight_tag, config.weight_importance,
                        config.weight_confidence, config.weight_recency, config.weight_exact,
                        config.weight_relevance)  # in COMPONENT_KEYS order

    def score(self, match_type: str, match_score: float, similarity: float | None,
              relation_score: float | None, metadata_score: float, memory: dict[str, Any],
              keyword: float = 0.0, centred: float | None = None,
              token: float | None = None, meta_terms: Set[str] | None = None,
              lowered_tags: Set[str] | None = None) -> tuple[float, dict[str, Any]]:
        """Final score and the score_components block for one candidate (the fields of ScoreInputs).

        ``meta_terms`` and ``lowered_tags``: the memory's metadata_terms and lowercased tags,
        when the caller has them (metadata_terms_of_text, lowered_tags_of_text); else they
        are worked out from ``memory``.
        """
        config = self.config
        if meta_terms is None:
            meta_terms = metadata_terms(memory.get("metadata") or {})
        if lowered_tags is None:
            lowered_tags = {t.lower() for t in memory.get("tags") or []}
        bonus = context_bonus(self.profile, memory, meta_terms) if self.profile is not None else 0.0
        # Token evidence, when the memory has codes, stands in for its cosine; the
        # centred cosine, when there is one, for the plain one.
        cosine = centred if centred is not None else similarity
        if type(cosine) is float and -1.0 - COSINE_SLACK <= cosine <= 1.0 + COSINE_SLACK:
            # usable_cosine's usual case and the clamp at 0, without the calls (the same floats)
            vector = 1.0 if cosine > 1.0 else cosine if cosine > 0.0 else 0.0
        else:
            cosine = usable_cosine(cosine)
            vector = max(0.0, cosine) if cosine is not None else 0.0
        if token is not None and math.isfinite(token):
            vector = token_score(token)
        if match_type == "trending" or type(keyword) is not float or not 0.0 < keyword <= 1.0:
            # (a float in (0, 1] is what keyword_component's clamp gives back unchanged)
            keyword = keyword_component(match_type, match_score, keyword)
        metadata = _number(metadata_score)
        # 1.0 when the whole query equals a metadata string or token.
        exact = 1.0 if self.query_text and self.query_text in meta_terms else 0.0
        evidence = max(vector, keyword, metadata, exact)
        relation = 0.0 if relation_score is None else _number(relation_score)
        tag = lowered_tag_score(self.tokens, lowered_tags, meta_terms, self.token_cap)
        # _number's usual case inline (a finite float as it is: x - x is 0.0 only for those);
        # it is five calls per candidate otherwise.
        importance, confidence, relevance = (memory.get("importance"), memory.get("confidence"),
                                             memory.get("relevance_score"))
        if not (type(importance) is float and importance - importance == 0.0):
            importance = _number(importance)
        if not (type(confidence) is float and confidence - confidence == 0.0):
            confidence = _number(confidence)
        if not (type(relevance) is float and relevance - relevance == 0.0):
            relevance = _number(relevance)
        recency = _recency(parse_epoch(memory.get("timestamp")), self.now_epoch, config.recency_window_days,
                           config.recency_curve)
        gated = self.gate is not None and evidence < self.gate
        if gated:
            factor = evidence / self.gate  # type: ignore[operator]
            importance, confidence, recency = importance * factor, confidence * factor, recency * factor
            tag, relevance = tag * factor, relevance * factor
        w = self.weights
        # The products summed in COMPONENT_KEYS order, as ever, so that no score moves.
        final = sum((vector * w[0], keyword * w[1], metadata * w[2], relation * w[3], tag * w[4],
                     importance * w[5], confidence * w[6], recency * w[7], exact * w[8],
                     relevance * w[9])) + bonus
        if not math.isfinite(final):  # every component is finite: only a non-finite weight gets here
            final = 0.0
        components: dict[str, Any] = {
            "vector": vector, "keyword": keyword, "metadata": metadata, "relation": relation,
            "tag": tag, "importance": importance, "confidence": confidence, "recency": recency,
            "exact": exact, "relevance": relevance,
            "context": bonus, "evidence": evidence, "relevance_gated": gated,
        }
        return final, components


def _number(value: Any) -> float:
    """A stored number (importance, confidence, relevance); 0.0 when missing or not finite."""
    if type(value) is float:  # the usual case, five times per candidate
        return value if math.isfinite(value) else 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0
