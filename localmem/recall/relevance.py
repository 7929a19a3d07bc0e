"""``confidence`` in recall's body: is anything relevant to the query stored at all?

Recall always fills its limit when the scope holds enough memories, so a
query about nothing stored still returns five results at final scores
around 0.25. This block says how much to trust them, with the same bands
and rules as the Kagura route's ``confidence`` (``confidence_bands.py``,
calibrated for all-MiniLM-L6-v2, ``LOCALMEM_V1_CONFIDENCE_BANDS``), applied
to recall's own evidence: the cosines of the query's candidates in scope
(the vector channel's neighbours and every other candidate, scored against
the query vector), the nearest ``POOL`` of them after the current-state
rules. Without a vector channel, the keyword scores stand in. Ranking is
untouched; a request without a query (or embedding) gets no block.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from .confidence_bands import POOL, keyword_confidence, semantic_confidence
from ..timeparse import format_timestamp
from .state import active_replacements, state_reason

if TYPE_CHECKING:
    from ..storage.backend import Backend


class Evidence:
    """The best cosine and keyword score each candidate showed, over every query of a request."""

    def __init__(self) -> None:
        self.cosine: dict[str, float] = {}
        self.keyword: dict[str, float] = {}
        self.memories: dict[str, dict[str, Any]] = {}

    def add(self, candidates: list[dict[str, Any]]) -> None:
        for candidate in candidates:
            memory_id = candidate["id"]
            self.memories[memory_id] = candidate["memory"]
            similarity = candidate.get("_similarity")
            if similarity is not None:
                self.cosine[memory_id] = max(similarity, self.cosine.get(memory_id, -1.0))
            keyword = candidate.get("_keyword") or 0.0
            if keyword > 0:
                self.keyword[memory_id] = max(keyword, self.keyword.get(memory_id, 0.0))


def _current(backend: "Backend", ids: list[str], memories: dict[str, dict[str, Any]],
             now: datetime, heads_of: Callable[[list[str]], dict[str, Any]] | None) -> list[str]:
    """``ids`` without the memories the current-state filter would hide."""
    now_iso = format_timestamp(now)
    live = [i for i in ids if state_reason(memories[i], now_iso) is None]
    superseded = heads_of(live) if heads_of is not None else active_replacements(backend, live, now_iso)
    return [i for i in live if i not in superseded]


def recall_confidence(backend: "Backend", evidence: Evidence, result_count: int, *,
                      semantic: bool, current_only: bool, now: datetime,
                      heads_of: Callable[[list[str]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``confidence`` block: the v1 route's fields (``level`` none/low/moderate/high,
    ``top_score``, ``prominence``, ``relative_margin``, ``result_count``, ``rationale``) and
    ``basis``: ``"semantic"`` (cosines) or ``"keyword"`` (no vector channel). ``heads_of``:
    the recall's SupersessionHeads, which already knows most of the memories asked about."""
    config = backend.config
    if semantic:
        ranked = sorted(evidence.cosine, key=lambda i: -evidence.cosine[i])
        if current_only:
            # Filter a little more than the pool, so hidden memories do not shrink it.
            ranked = _current(backend, ranked[:POOL * 2], evidence.memories, now, heads_of)
        cosines = [evidence.cosine[i] for i in ranked[:POOL]]
        block = semantic_confidence(cosines, result_count, config.v1_confidence_bands,
                                    config.v1_near_duplicate)
        return {**block, "basis": "semantic"}
    ranked = sorted(evidence.keyword, key=lambda i: -evidence.keyword[i])
    if current_only:
        ranked = _current(backend, ranked[:POOL * 2], evidence.memories, now, heads_of)
    scores = [evidence.keyword[i] for i in ranked[:POOL]]
    return {**keyword_confidence(scores, result_count, scores[0] if scores else None), "basis": "keyword"}
