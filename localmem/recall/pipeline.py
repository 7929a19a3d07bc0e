"""The recall pipeline: channels → scoring → dedup/sort → state filter → gates → response."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..text import extract_keywords
from ..timeparse import format_timestamp
from .channels import keyword_candidates, scope_bindings, trending_candidates, vector_candidates
from .gating import apply_score_gates
from .params import RecallParams, parse_recall_params
from .ranking import dedupe, sort_results
from .scoring import ScoreInputs, score_candidate
from .state import apply_state_filter

if TYPE_CHECKING:
    from ..store import MemoryStore


class QueryVectors:
    """Query embeddings for one request, computed once per distinct text."""

    def __init__(self, store: "MemoryStore", explicit: bytes | None) -> None:
        self.store = store
        self.explicit = explicit
        self.available = explicit is not None or (store.embedder is not None and store.has_vector_index)
        self._cache: dict[str, bytes | None] = {}

    def for_query(self, query: str) -> bytes | None:
        if self.explicit is not None:
            return self.explicit
        if not query or not self.available:
            return None
        if query not in self._cache:
            vectors = self.store.embed_texts([query])
            if vectors is None:
                self.available = False
            self._cache[query] = vectors[0] if vectors else None
        return self._cache[query]


def vector_fetch_size(params: RecallParams, limit: int, config_overfetch: int, cap: int,
                      max_limit: int, has_text: bool) -> int:
    """AutoMem's over-fetch: more vector candidates than asked for, so re-ranking has room."""
    fetch = max(limit, min(limit * config_overfetch, cap))
    if params.tags and has_text:
        fetch = max(limit, min(max(fetch, max_limit), cap))
    return fetch


def run_single_query(store: "MemoryStore", params: RecallParams, query: str, limit: int,
                     vectors: QueryVectors, now: Any) -> list[dict[str, Any]]:
    """Candidates for one query, scored, filtered, deduplicated, sorted and cut to ``limit``."""
    config = store.config
    scope = scope_bindings(params, config.excluded_types)
    query_vector = vectors.for_query(query)
    has_text = bool(query) or params.embedding is not None
    candidates: list[dict[str, Any]] = []
    seen: set[str] = set()

    def admit(found: list[dict[str, Any]]) -> None:
        for candidate in found:
            if candidate["id"] not in seen:
                seen.add(candidate["id"])
                candidates.append(candidate)

    fetch = vector_fetch_size(params, limit, config.vector_overfetch, config.vector_fetch_cap,
                              config.max_limit, has_text)
    if query_vector is not None:
        admit(vector_candidates(store, params, scope, query_vector, fetch))
    if query:
        admit(keyword_candidates(store, params, scope, query, query_vector, max(fetch, config.keyword_fetch)))
    if not query and query_vector is None:
        admit(trending_candidates(store, params, scope, limit))

    tokens = extract_keywords(query.lower())
    for candidate in candidates:
        final, components = score_candidate(
            ScoreInputs(
                match_type=candidate["match_type"],
                match_score=candidate["match_score"],
                similarity=candidate["_similarity"],
                relation_score=candidate.get("relation_score"),
                metadata_score=candidate.get("_metadata_score", 0.0),
                memory=candidate["memory"],
            ),
            query, tokens, now, config,
        )
        candidate["final_score"] = final
        candidate["score"] = final
        candidate.setdefault("original_score", candidate["match_score"])
        candidate["score_components"] = components
        candidate["_query"] = query
    if params.min_score > 0:
        candidates = [c for c in candidates if c["final_score"] >= params.min_score]
    candidates, _ = dedupe(candidates)
    return sort_results(candidates, params.sort)[:limit]


def _public(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if not k.startswith("_") or k == "_query"}
    out.setdefault("relations", [])
    return out


def run_recall(store: "MemoryStore", raw: dict[str, Any]) -> dict[str, Any]:
    """Answer one recall request with AutoMem's GET /recall response body."""
    started = time.perf_counter()
    params = parse_recall_params(raw, store.config, store.dimensions, store.now())
    now = params.now
    vectors = QueryVectors(store, params.embedding)

    queries = params.queries or [params.query]
    per_query_limit = params.per_query_limit if params.queries else params.limit
    gathered: list[dict[str, Any]] = []
    for query in queries:
        gathered.extend(run_single_query(store, params, query, per_query_limit, vectors, now))
    merged, dedup_removed = dedupe(gathered)
    seeds = sort_results(merged, params.sort)[: params.limit]
    results = list(seeds)

    state_filter = None
    if params.current_only:
        results, state_filter = apply_state_filter(results, now, params.state_debug)
    results, score_filter = apply_score_gates(
        results, sort=params.sort, use_adaptive=params.adaptive_floor, min_score=params.min_score)

    response: dict[str, Any] = {
        "status": "success",
        "query": params.query,
        "results": [_public(r) for r in results],
        "count": len(results),
        "dedup_removed": dedup_removed,
        "sort": params.sort,
        "state_mode": params.state_mode,
    }
    if state_filter is not None:
        response["state_filter"] = state_filter
    if params.queries:
        response["queries"] = queries
    else:
        response["keywords"] = extract_keywords(params.query.lower())
    vector_enabled = vectors.available
    response["vector_search"] = {
        "enabled": vector_enabled,
        "matched": any(r["match_type"] == "vector" for r in results),
    }
    if not vector_enabled:
        response["degraded"] = True
        response["degraded_reason"] = "embedding_unavailable"
    if params.has_window:
        response["time_window"] = {
            "start": format_timestamp(params.window_start) if params.window_start else None,
            "end": format_timestamp(params.window_end) if params.window_end else None,
        }
    if params.tags:
        response["tags"] = params.tags
        has_semantic = bool(params.query or params.queries) and vector_enabled or params.embedding is not None
        response["tag_scope"] = {
            "filtered": True,
            "pool_size_hint": sum(1 for r in gathered if r["match_type"] == "vector") if has_semantic else None,
            "gated_low_evidence": sum(1 for r in results if r["score_components"].get("relevance_gated")),
        }
    if params.exclude_tags:
        response["exclude_tags"] = params.exclude_tags
    if score_filter is not None:
        response["score_filter"] = score_filter
    response["tag_mode"] = params.tag_mode
    response["tag_match"] = params.tag_match
    response["query_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
    store.touch([r["id"] for r in results], now)
    return response
