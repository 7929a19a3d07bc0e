"""Candidate channels of recall: vector kNN, FTS5 keywords and trending, all in SQL."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..records import rows_as_dicts, to_record
from .metadata_search import metadata_match_score, metadata_scan_limit, metadata_slot_count, prefilter_terms
from ..timeparse import format_timestamp
from ..vector_index import knn_parameters
from .keywords import KeywordScorer, bm25_weights_sql
from .params import RecallParams

if TYPE_CHECKING:
    from ..store import MemoryStore



def scope_bindings(params: RecallParams, excluded_types: tuple[str, ...], *,
                   with_tags: bool = True) -> dict[str, Any]:
    """Named parameters of the recall_scope_filter fragment."""
    tags = params.tags if with_tags else []
    return {
        "excluded_types": json.dumps(list(excluded_types)),
        "window_start": format_timestamp(params.window_start) if params.window_start else None,
        "window_end": format_timestamp(params.window_end) if params.window_end else None,
        "tags": json.dumps(tags) if tags else None,
        "tag_match": params.tag_match,
        "tag_mode": params.tag_mode,
        "tag_count": len(tags),
        "exclude_tags": json.dumps(params.exclude_tags) if params.exclude_tags else None,
    }


def _candidate(row: dict[str, Any], match_type: str, match_score: float, source: str,
               similarity: float | None) -> dict[str, Any]:
    return {
        "id": row["id"],
        "memory": to_record(row),
        "match_type": match_type,
        "match_score": match_score,
        "source": source,
        "_similarity": similarity,
        "_pk": row["pk"],
    }


def vector_candidates(store: "MemoryStore", params: RecallParams, scope: dict[str, Any],
                      query_vector: bytes, k: int) -> list[dict[str, Any]]:
    scoped = scope["tags"] is not None or params.has_window
    statement = store.sql["recall_vector_scoped" if scoped else "recall_vector"]
    rows = rows_as_dicts(store.conn.execute(statement, {**scope, **knn_parameters(query_vector, k)}))
    out = []
    for row in rows:
        similarity = row["similarity"]
        if similarity is None:  # a zero or NaN vector: nothing to rank by
            continue
        out.append(_candidate(row, "vector", float(similarity), "qdrant", float(similarity)))
    return out


def keyword_candidates(store: "MemoryStore", params: RecallParams, scope: dict[str, Any],
                       scorer: KeywordScorer, query_vector: bytes | None, k: int) -> list[dict[str, Any]]:
    """FTS5 hits in scope, best BM25 (with thread context) first; the score is set later."""
    match = scorer.candidate_match()
    if match is None:
        return []
    statement = store.sql["recall_keyword"].format(
        weights=bm25_weights_sql(store.config.keyword_column_weights))
    rows = rows_as_dicts(store.conn.execute(statement, {
        **scope, "match": match, "query_vector": query_vector, "k": k}))
    out = []
    for row in rows:
        similarity = row["similarity"]
        candidate = _candidate(row, "keyword", 0.0, "graph",
                               float(similarity) if similarity is not None else None)
        if match == scorer.match:  # all terms searched: the channel's BM25 is the score's
            candidate["_bm25"] = row["bm25"]
        out.append(candidate)
    return out


def trending_candidates(store: "MemoryStore", params: RecallParams, scope: dict[str, Any],
                        k: int) -> list[dict[str, Any]]:
    rows = rows_as_dicts(store.conn.execute(store.sql["recall_trending"], {
        **scope, "order_by": params.sort, "k": k}))
    return [_candidate(row, "trending", float(row["importance"]), "graph", None) for row in rows]


def metadata_candidates(store: "MemoryStore", params: RecallParams, scope: dict[str, Any],
                        query: str, limit: int, seen: set[str]) -> list[dict[str, Any]]:
    """The metadata sidecar: strong matches of whitelisted metadata values.

    Returns up to ``max(1, min(limit, 10))`` new candidates plus "upgrades"
    of already-seen ones (the later dedup keeps the higher-scored copy).
    """
    terms = prefilter_terms(query)
    if not terms:
        return []
    rows = rows_as_dicts(store.conn.execute(store.sql["recall_metadata"], {
        **scope, "terms": json.dumps(terms), "k": metadata_scan_limit(limit)}))
    scored = []
    for row in rows:
        score = metadata_match_score(query, row["metadata"])
        if score > 0:
            candidate = _candidate(row, "metadata", score, "graph", None)
            candidate["_metadata_score"] = score
            scored.append(candidate)
    scored.sort(key=lambda c: -c["match_score"])
    new = [c for c in scored if c["id"] not in seen][: metadata_slot_count(limit)]
    upgrades = [c for c in scored if c["id"] in seen]
    return new + upgrades


def priority_candidates(store: "MemoryStore", scope: dict[str, Any],
                        memory_ids: list[str]) -> list[dict[str, Any]]:
    """Listed ids fetched directly (match_type priority_id), only those within the scope."""
    if not memory_ids:
        return []
    rows = rows_as_dicts(store.conn.execute(store.sql["recall_by_ids"], {
        **scope, "ids": json.dumps(memory_ids)}))
    return [_candidate(row, "priority_id", 0.0, "graph", None) for row in rows]
