"""Store answers as *recall results*: what ``MemoryStore.recall``, ``by_tag`` and ``get``
return, reshaped into the ``{"results": [item...], "count", "mode", ...}`` form that
``formatting.build_recall_response`` renders (``mcp-automem``'s result shape)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Fields of a GET /recall body (or by-tag page) carried into structuredContent, in this order.
ENVELOPE_FIELDS = (
    "count", "mode", "has_more", "limit", "offset", "next_offset", "dedup_removed", "query", "sort",
    "keywords", "time_window", "tags", "exclude_tags", "tag_mode", "tag_match", "state_mode",
    "tag_scope", "scope_fallback", "recency_bias", "score_filter", "queries", "vector_search",
    "learned_rank", "jit_enriched_count", "query_time_ms", "entities", "expansion", "entity_expansion",
    "context_priority", "state_filter", "degraded", "degraded_reason", "warnings", "confidence",
)
# Per-result flags surfaced in every format when present.
RESULT_FLAGS = ("deduped_from", "expanded_from_entity", "outside_tag_scope", "jit_enriched", "state_replaces")


def memory_view(record: Mapping[str, Any], memory_id: str | None = None) -> dict[str, Any]:
    """A stored memory as the MCP client presents it (``memory_id``, ``created_at``)."""
    timestamp = record.get("timestamp") or record.get("created_at") or ""
    return {
        "memory_id": memory_id or record.get("id") or record.get("memory_id") or "",
        "content": record.get("content") or "",
        "summary": record.get("summary"),
        "tags": list(record.get("tags") or []),
        "importance": record.get("importance") if record.get("importance") is not None else 0,
        "created_at": timestamp,
        "updated_at": record.get("updated_at") or timestamp,
        "last_accessed": record.get("last_accessed"),
        "metadata": record.get("metadata") if isinstance(record.get("metadata"), Mapping) else {},
        "type": record.get("type"),
        "confidence": record.get("confidence"),
        "t_valid": record.get("t_valid"),
        "t_invalid": record.get("t_invalid"),
        "archived": bool(record.get("archived")) if record.get("archived") is not None else None,
    }


def direct_item(record: Mapping[str, Any]) -> dict[str, Any]:
    """A memory fetched by id or by tag, wrapped as a recall item (match_type ``direct``)."""
    memory = memory_view(record)
    return {"id": memory["memory_id"], "match_type": "direct", "final_score": 1,
            "score_components": {}, "relations": [], "memory": memory}


def ranked_item(result: Mapping[str, Any]) -> dict[str, Any]:
    memory = memory_view(result.get("memory") or {}, result.get("id"))
    final = result.get("final_score")
    if final is None:
        final = result.get("score", 0)
    item: dict[str, Any] = {
        "id": result.get("id"),
        "match_type": result.get("match_type"),
        "match_score": result.get("match_score"),
        "relation_score": result.get("relation_score"),
        "final_score": final,
        "score_components": result.get("score_components") or {},
        "source": result.get("source"),
        "relations": result.get("relations") or result.get("related_to") or [],
        "memory": memory,
    }
    if isinstance(result.get("relevance"), (int, float)):  # recall/relevance_model.py; 0.0 included
        item["relevance"] = result["relevance"]
    for flag in RESULT_FLAGS:
        if result.get(flag) not in (None, [], False):
            item[flag] = result[flag]
    return item


def ranked_result(response: Mapping[str, Any]) -> dict[str, Any]:
    """A ``MemoryStore.recall`` answer (the GET /recall body) as a recall result."""
    results = [ranked_item(r) for r in response.get("results") or []]
    out: dict[str, Any] = {k: response[k] for k in ENVELOPE_FIELDS if response.get(k) is not None}
    out["results"] = results
    out["count"] = response.get("count") if isinstance(response.get("count"), int) else len(results)
    out["mode"] = "ranked"
    return out


def enumeration_result(page: Mapping[str, Any]) -> dict[str, Any]:
    """A ``MemoryStore.by_tag`` page as a recall result."""
    memories = page.get("memories") or []
    out: dict[str, Any] = {
        "results": [direct_item(m) for m in memories],
        "count": page.get("count") if isinstance(page.get("count"), int) else len(memories),
        "mode": "enumeration",
        "tags": page.get("tags"),
        "limit": page.get("limit"),
        "offset": page.get("offset", 0),
        "has_more": bool(page.get("has_more")),
    }
    if page.get("next_offset") is not None:
        out["next_offset"] = page["next_offset"]
    return out


def id_fetch_result(record: Mapping[str, Any] | None) -> dict[str, Any]:
    """A memory fetched by id (None when there is no such memory) as a recall result."""
    results = [direct_item(record)] if record else []
    return {"results": results, "count": len(results), "mode": "id_fetch"}
