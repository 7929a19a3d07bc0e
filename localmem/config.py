"""All weights and limits of recall, read from AutoMem's environment variable names."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from .errors import ConfigError

_TRUE = frozenset({"1", "true", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "no", "n", "off"})
BOOLEAN_WORDS = _TRUE | _FALSE


@dataclass(frozen=True)
class Config:
    """Recall configuration; defaults are AutoMem's."""

    weight_vector: float = 0.35
    weight_keyword: float = 0.35
    weight_metadata: float = 0.35
    weight_exact: float = 0.20
    weight_importance: float = 0.10
    weight_confidence: float = 0.05
    weight_recency: float = 0.10
    weight_tag: float = 0.20
    weight_relation: float = 0.25
    weight_relevance: float = 0.0
    weight_temporal: float = 0.1
    recency_window_days: float = 180.0
    recency_curve: str = "linear"  # linear | exp
    tag_score_token_cap: int = 0

    max_limit: int = 100
    relation_limit: int = 5
    expansion_limit: int = 25
    min_score: float = 0.0
    adaptive_floor: bool = True
    metadata_search_enabled: bool = True
    vector_overfetch: int = 4
    vector_fetch_cap: int = 200
    excluded_types: tuple[str, ...] = ("MetaPattern",)
    relevance_gate: float = 0.0
    recency_bias: str = "off"  # off | on | auto

    # localmem's own knobs
    keyword_fetch: int = 50  # FTS5 candidates per query before scoring
    # "bm25": BM25 over content + thread context, normalised by an ideal match
    # (recall/keywords.py); "automem": AutoMem's substring score / keyword share.
    keyword_scoring: str = "bm25"
    # bm25() column weights: content, tags, then thread neighbours
    # prev1, next1, prev2, next2, prev3, next3 (tags feed the tag component instead).
    keyword_column_weights: tuple[float, ...] = (1.0, 0.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.15)
    # Keyword idf from the memories a narrowed recall (tags, time window) searches,
    # not the whole store (recall/scoped_keywords.py); LOCALMEM_KEYWORD_SCOPE_IDF=0 turns it off.
    keyword_scope_idf: bool = True
    # The vector component as a cosine measured from the store's mean direction
    # (recall/centering.py); LOCALMEM_VECTOR_CENTERING=0 turns it off.
    vector_centering: bool = True
    # Token-level (late-interaction) evidence: token codes written for every memory
    # the store embeds, and the vector component of recall's candidates taken from
    # MaxSim over them (recall/late_interaction.py); LOCALMEM_TOKEN_EVIDENCE=0 turns
    # both off.
    token_evidence: bool = True
    # Learned re-ranking (recall/learned_rank.py): a tree model over pool features
    # adds the ``learned`` component, in [0, 1], at this weight;
    # LOCALMEM_LEARNED_RANK=0 turns it off, SEARCH_WEIGHT_LEARNED sets the weight.
    learned_rank: bool = True
    weight_learned: float = 1.0
    # Calendar dates named in the query's text (timegrammar/mentions.py) as a hint to the
    # learned model: a feature, and the date's own memories among the candidates;
    # LOCALMEM_QUERY_DATES=0 turns it off.
    query_dates: bool = True
    # Also past periods the query names relative to the request's now ("last Friday", "two
    # weeks ago"), when it names no calendar date; off: held out it did not lift LongMemEval's
    # R@10 and LoCoMo's fell (docs/quality.md). LOCALMEM_QUERY_RELATIVE_DATES=1 turns it on.
    query_relative_dates: bool = False
    # A question that gathers ("how many…", "the order of…") keeps at most two memories of one
    # thread in its first ten results unless another thread's best scores far lower
    # (recall/thread_spread.py); LOCALMEM_THREAD_SPREAD=0 turns it off.
    thread_spread: bool = True
    # A model file of one's own (benchmarks/quality/train_learned_rank.py --output) in place
    # of the packaged one, e.g. for another embedder (LOCALMEM_LEARNED_RANK_MODEL).
    learned_rank_model: str | None = None
    track_access: bool = True  # update last_accessed for recalled seeds
    # PRAGMA synchronous of the file (LOCALMEM_SYNCHRONOUS): NORMAL, or FULL to
    # also sync the WAL at every commit (the last commits survive a power cut).
    synchronous: str = "NORMAL"

    # Kagura-style recall (recall_v1, localmem/kagura/)
    # Hybrid weights: each arm is normalised by its best score, then mixed.
    v1_semantic_weight: float = 0.6
    v1_keyword_weight: float = 0.4
    # confidence.level bands on the raw top cosine: below the first is "none",
    # below the second "low", below the third "moderate", else "high".
    # Calibrated for all-MiniLM-L6-v2 (benchmarks/quality/confidence_calibration.py).
    v1_confidence_bands: tuple[float, float, float] = (0.25, 0.40, 0.60)
    # Cosine from which two current memories of one context are reported as
    # a supersede_candidate (a suggestion; nothing is changed).
    v1_near_duplicate: float = 0.95
    # The floor on each result's ``relevance`` (recall/relevance_model.py) above which it
    # counts as relevant: ``confidence.relevant`` and what a hook injects. None: the
    # packaged model's calibrated floor (localmem/models/relevance.json, for
    # all-MiniLM-L6-v2). LOCALMEM_RELEVANCE_FLOOR, a number in [0, 1].
    relevance_floor: float | None = None
    # A sentence-transformers cross-encoder for use_rerank (name or local path).
    rerank_model: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Config":
        """Read AutoMem's variable names (SEARCH_WEIGHT_*, RECALL_*) over the defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}

        def number(name: str, attr: str, *, minimum: float | None = None, at_least: float | None = None) -> None:
            """``minimum`` raises lower values to it (AutoMem's variables); ``at_least`` refuses them."""
            raw = env.get(name)
            if raw is None or not raw.strip():
                return
            try:
                value = float(raw)
            except ValueError as exc:
                raise ConfigError(f"{name} must be a number, got {raw!r}") from exc
            if not math.isfinite(value):
                raise ConfigError(f"{name} must be finite, got {raw!r}")
            if at_least is not None and value < at_least:
                raise ConfigError(f"{name} must be {at_least:g} or more, got {raw!r}")
            if minimum is not None:
                value = max(minimum, value)
            values[attr] = value

        def integer(name: str, attr: str, *, minimum: int) -> None:
            raw = env.get(name)
            if raw is None or not raw.strip():
                return
            try:
                values[attr] = max(minimum, int(raw))
            except ValueError as exc:
                raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc

        for suffix in ("VECTOR", "KEYWORD", "METADATA", "EXACT", "IMPORTANCE", "CONFIDENCE",
                       "RECENCY", "TAG", "RELATION", "RELEVANCE"):
            number(f"SEARCH_WEIGHT_{suffix}", f"weight_{suffix.lower()}")
        number("SEARCH_WEIGHT_TEMPORAL", "weight_temporal", minimum=0.0)
        number("SEARCH_WEIGHT_LEARNED", "weight_learned", at_least=0.0)
        number("SEARCH_RECENCY_WINDOW_DAYS", "recency_window_days")
        if values.get("recency_window_days", 1.0) <= 0:
            values["recency_window_days"] = 180.0
        curve = env.get("SEARCH_RECENCY_CURVE", "").strip().lower()
        if curve in ("linear", "exp"):
            values["recency_curve"] = curve
        integer("SEARCH_TAG_SCORE_TOKEN_CAP", "tag_score_token_cap", minimum=0)

        integer("RECALL_MAX_LIMIT", "max_limit", minimum=1)
        integer("RECALL_RELATION_LIMIT", "relation_limit", minimum=1)
        integer("RECALL_EXPANSION_LIMIT", "expansion_limit", minimum=1)
        number("RECALL_MIN_SCORE", "min_score", minimum=0.0)
        raw = env.get("RECALL_ADAPTIVE_FLOOR")
        if raw is not None and raw.strip():
            values["adaptive_floor"] = raw.strip().lower() in ("true", "1", "yes")
        raw = env.get("RECALL_METADATA_SEARCH_ENABLED")
        if raw is not None and raw.strip():
            values["metadata_search_enabled"] = raw.strip().lower() not in ("0", "false", "no")
        integer("RECALL_VECTOR_OVERFETCH", "vector_overfetch", minimum=1)
        integer("RECALL_VECTOR_FETCH_CAP", "vector_fetch_cap", minimum=1)
        raw = env.get("RECALL_EXCLUDED_TYPES")
        if raw is not None:
            values["excluded_types"] = tuple(t.strip() for t in raw.split(",") if t.strip())
        number("RECALL_RELEVANCE_GATE", "relevance_gate")
        if "relevance_gate" in values:
            values["relevance_gate"] = min(1.0, max(0.0, values["relevance_gate"]))
        bias = env.get("RECALL_RECENCY_BIAS", "").strip().lower()
        if bias in ("off", "on", "auto"):
            values["recency_bias"] = bias
        scoring = env.get("LOCALMEM_KEYWORD_SCORING", "").strip().lower()
        if scoring in ("bm25", "automem"):
            values["keyword_scoring"] = scoring
        for name, attr in (("LOCALMEM_KEYWORD_SCOPE_IDF", "keyword_scope_idf"),
                           ("LOCALMEM_VECTOR_CENTERING", "vector_centering"),
                           ("LOCALMEM_TOKEN_EVIDENCE", "token_evidence"),
                           ("LOCALMEM_LEARNED_RANK", "learned_rank"),
                           ("LOCALMEM_QUERY_DATES", "query_dates"),
                           ("LOCALMEM_QUERY_RELATIVE_DATES", "query_relative_dates"),
                           ("LOCALMEM_THREAD_SPREAD", "thread_spread")):
            raw = env.get(name)
            if raw is not None and raw.strip():
                if raw.strip().lower() not in BOOLEAN_WORDS:
                    raise ConfigError(f"{name} must be a boolean (1/0, true/false, on/off), got {raw!r}")
                values[attr] = raw.strip().lower() in _TRUE
        raw = env.get("LOCALMEM_TRACK_ACCESS")
        if raw is not None and raw.strip().lower() in _FALSE:
            values["track_access"] = False
        raw = env.get("LOCALMEM_LEARNED_RANK_MODEL")
        if raw is not None and raw.strip():
            values["learned_rank_model"] = raw.strip()
        raw = env.get("LOCALMEM_SYNCHRONOUS")
        if raw is not None and raw.strip():
            value = raw.strip().upper()
            if value not in ("NORMAL", "FULL"):
                raise ConfigError(f"LOCALMEM_SYNCHRONOUS must be NORMAL or FULL, got {raw!r}")
            values["synchronous"] = value
        number("LOCALMEM_V1_SEMANTIC_WEIGHT", "v1_semantic_weight", minimum=0.0)
        number("LOCALMEM_V1_KEYWORD_WEIGHT", "v1_keyword_weight", minimum=0.0)
        number("LOCALMEM_V1_NEAR_DUPLICATE", "v1_near_duplicate")
        if "v1_near_duplicate" in values and not 0.0 < values["v1_near_duplicate"] <= 1.0:
            raise ConfigError("LOCALMEM_V1_NEAR_DUPLICATE must be in (0, 1]")
        number("LOCALMEM_RELEVANCE_FLOOR", "relevance_floor")
        if "relevance_floor" in values and not 0.0 <= values["relevance_floor"] <= 1.0:
            raise ConfigError("LOCALMEM_RELEVANCE_FLOOR must be in [0, 1]")
        raw = env.get("LOCALMEM_V1_CONFIDENCE_BANDS")
        if raw is not None and raw.strip():
            values["v1_confidence_bands"] = _parse_bands(raw)
        raw = env.get("LOCALMEM_RERANK_MODEL")
        if raw is not None and raw.strip():
            values["rerank_model"] = raw.strip()
        return cls(**values)

    def with_changes(self, **changes: Any) -> "Config":
        """A copy with some fields changed."""
        names = {f.name for f in fields(self)}
        unknown = set(changes) - names
        if unknown:
            raise ConfigError(f"Unknown Config fields: {', '.join(sorted(unknown))}")
        return replace(self, **changes)


def _parse_bands(raw: str) -> tuple[float, float, float]:
    """``"0.25,0.40,0.60"``: three increasing cosines (none / low / moderate upper bounds)."""
    try:
        bands = tuple(float(part) for part in raw.split(","))
    except ValueError as exc:
        raise ConfigError(f"LOCALMEM_V1_CONFIDENCE_BANDS must be three numbers, got {raw!r}") from exc
    if len(bands) != 3 or not all(math.isfinite(b) for b in bands) or not bands[0] <= bands[1] <= bands[2]:
        raise ConfigError(
            f"LOCALMEM_V1_CONFIDENCE_BANDS must be three increasing numbers, got {raw!r}")
    return bands  # type: ignore[return-value]


def parse_bool(value: Any, default: bool) -> bool:
    """AutoMem's boolean parsing: yes/no words, anything else is the default."""
    if isinstance(value, bool):
        return value
    if value is None:
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return default
