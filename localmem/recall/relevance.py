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

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from .confidence_bands import COSINE_ADVICE, POOL, keyword_confidence, semantic_confidence
from .keywords import query_terms
from .late_interaction import token_score
from .relevance_model import (keyword_coverage, level_of, reciprocal_ranks, relevance_features,
                              relevance_floor, relevance_of, summary)
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
            if similarity is not None:  # max(similarity, held) without the call: the same float
                held = self.cosine.get(memory_id, -1.0)
                self.cosine[memory_id] = held if held > similarity else similarity
            keyword = candidate.get("_keyword") or 0.0
            if keyword > 0:
                held = self.keyword.get(memory_id, 0.0)
                self.keyword[memory_id] = held if held > keyword else keyword


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


def attach_relevance(results: list[dict[str, Any]], primary_query: str,
                     prompt_inputs: Callable[[str], dict[str, float]] | None = None) -> None:
    """Give each result its ``relevance`` (recall/relevance_model.py) from its own evidence,
    its place in the answer by ``final_score`` (no other memory's score counts) and the
    prompt's standing against the scope (``prompt_inputs(query)``: ``kth_cosine`` and
    ``unseen_terms``, recall/prompt_signals.py), and its inputs as
    ``score_components.relevance_inputs``."""
    terms: dict[str, list[str]] = {}
    prompts: dict[str, dict[str, float]] = {}
    places = reciprocal_ranks([result.get("final_score") for result in results])
    for result, reciprocal_rank in zip(results, places):
        query = result.get("_query") or primary_query or ""
        if query not in terms:
            terms[query] = query_terms(query) if query else []
            prompts[query] = prompt_inputs(query) if prompt_inputs is not None else {}
        cosine = result.get("_similarity")
        prompt = prompts[query]
        token = result.get("_token")
        components = result.get("score_components")
        if not isinstance(components, dict):
            components = result["score_components"] = {}
        features = relevance_features(
            cosine=cosine,
            coverage=keyword_coverage(terms[query], (result.get("memory") or {}).get("content")),
            token=token_score(token) if isinstance(token, float) and math.isfinite(token)
            else (max(0.0, cosine) if cosine is not None else 0.0),
            keyword=result.get("_keyword"), reciprocal_rank=reciprocal_rank,
            cosine_over_kth=(cosine - prompt["kth_cosine"]) if cosine is not None and "kth_cosine" in prompt else 0.0,
            unseen_terms=prompt.get("unseen_terms", 0.0))
        components["relevance_inputs"] = features
        result["relevance"] = relevance_of(features)


def with_relevance(block: dict[str, Any], results: list[dict[str, Any]], config: Any, *,
                   follow: bool = True) -> dict[str, Any]:
    """``block`` (a confidence block) with the relevance summary: ``relevance`` (the best
    result's), ``relevant`` (it clears the floor), ``relevance_floor``, ``relevant_count``.

    ``follow`` (recall): ``level`` is read from the best relevance (relevance_model.level_of),
    so a correct top hit is no longer called irrelevant because its cosine alone is modest.
    Otherwise (recall_v1, whose ``level`` Kagura's spec ties to the cosine bands) the
    level stays, but a relevant answer reads at least ``moderate``, as a near-duplicate does.
    """
    floor = relevance_floor(config)
    found = summary(results, floor)
    out = {**block, **found}
    if not results:
        return out
    verdict = (f"best result's relevance {found['relevance']:.2f} "
               f"({'at or above' if found['relevant'] else 'below'} the floor {floor:.2f}; "
               f"from its cosine, keyword coverage, token and keyword evidence)")
    if follow:
        level = level_of(found["relevance"], floor)
        advice = {"none": "nothing stored looks relevant", "low": "probably nothing relevant",
                  "moderate": "relevant memories are likely among these",
                  "high": "a relevant memory is very likely among these"}[level]
        out["level"] = level
        evidence = str(block.get("rationale", ""))
        cosine_advice = f": {COSINE_ADVICE.get(str(block.get('level')), '')}."
        if evidence.endswith(cosine_advice):  # the cosine bands' advice no longer decides
            evidence = evidence[:-len(cosine_advice)] + "."
        out["rationale"] = f"{verdict[0].upper()}{verdict[1:]}: {advice}. Evidence: {evidence}"
    else:
        if found["relevant"] and block.get("level") in ("none", "low"):
            out["level"] = "moderate"
            verdict += ", so at least moderate"
        out["rationale"] = f"{block.get('rationale', '')} Relevance: {verdict}.".strip()
    return out


def evidence_text(confidence: dict[str, Any]) -> str:
    """What a ``confidence`` block rests on, for people: `` (relevance 0.82; best cosine 0.61)``."""
    parts = []
    relevance = confidence.get("relevance")
    if isinstance(relevance, (int, float)):
        parts.append(f"relevance {relevance:.2f}")
    top = confidence.get("top_score")
    if confidence.get("basis") == "keyword":
        parts.append("keyword evidence only")
    elif isinstance(top, (int, float)):
        parts.append(f"best cosine {top:.2f}")
    return f" ({'; '.join(parts)})" if parts else ""
