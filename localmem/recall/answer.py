"""The answer of one recall request: AutoMem's GET /recall body, built from a finished
``Recall`` (recall/pipeline.py) with the blocks localmem adds (state filter, learned rank,
keyword notes, scopes, warnings)."""

from __future__ import annotations

import json
from typing import Any

from ..text import extract_keywords
from .context import context_priority_block
from .keywords import COMMON_TERM_ROWS
from .learned_rank import report

# ``recall`` below is a finished ``pipeline.Recall``, typed ``Any``: this module is imported
# by pipeline.py, and even a type-only import back would make a circle.


def state_filter_block(recall: Any, results: list[dict[str, Any]]) -> dict[str, Any]:
    """``state_filter``: what the current-state filter hid from this answer, and what took its place."""
    replacements = [{"id": r["id"], "replaces_id": r["state_replaces"],
                     "relation_type": r["relations"][0]["type"]}
                    for r in results if r.get("match_type") == "state_replacement"]
    block: dict[str, Any] = {"current_only": True, "suppressed_count": len(recall.hidden),
                             "replacement_count": len(replacements)}
    if recall.params.state_debug:
        block["suppressed"] = list(recall.hidden.values())
        block["replacements"] = replacements
    return block


def recall_response(recall: Any, results, queries, dedup_removed, state_filter, score_filter,
                    seeds, expansions, entity_results, entity_names, recency_applied,
                    fallback_active) -> dict[str, Any]:
    """AutoMem's GET /recall body for one finished request, with localmem's extra blocks."""
    params = recall.params
    response: dict[str, Any] = {
        "status": "success",
        "query": params.query,
        "results": [public_result(r) for r in results],
        "count": len(results),
        "dedup_removed": dedup_removed,
        "sort": params.sort,
        "state_mode": params.state_mode,
    }
    if state_filter is not None:
        response["state_filter"] = state_filter
    if queries is not None:
        response["queries"] = queries
    else:
        response["keywords"] = extract_keywords(params.query.lower())
    response["vector_search"] = {
        "enabled": recall.vectors.available,
        "matched": recall.vector_pool > 0,
        "token_scored": recall.token_scored,
    }
    if params.query or params.queries:
        response["learned_rank"] = report(recall.learned_decision[0], recall.learned_ranked,
                                          recall.dates_read())
        if recall.spread_moved:
            response["learned_rank"]["thread_spread"] = {"moved": recall.spread_moved}
    left_out = sorted({t for scorer in recall.keyword_scorers.values() for t in scorer.left_out})
    if left_out:
        response["keyword_search"] = {
            "left_out": left_out,
            "reason": (f"in more than {COMMON_TERM_ROWS:,} memories: too common to rank by; "
                       "the keyword score uses the query's other terms"),
        }
    if not recall.vectors.available:
        response["degraded"] = True
        response["degraded_reason"] = "embedding_unavailable"
    if params.expand_relations:
        response["expansion"] = {
            "enabled": True, "seed_count": len(seeds), "expanded_count": len(expansions),
            "relation_limit": params.relation_limit, "expansion_limit": params.expansion_limit,
            "respect_tags": params.expand_respect_tags,
        }
    if params.expand_entities:
        response["entity_expansion"] = {
            "enabled": True, "expanded_count": len(entity_results), "entities_found": entity_names,
        }
    if params.time.requested:
        response["time_window"] = params.time.describe()
    if params.tags:
        semantic = recall.vectors.available and bool(params.query or params.queries or params.embedding)
        response["tags"] = params.tags
        response["tag_scope"] = {
            "filtered": True,
            "pool_size_hint": recall.vector_pool if semantic else None,
            "gated_low_evidence": sum(1 for r in results
                                      if r.get("score_components", {}).get("relevance_gated")),
        }
    if fallback_active:
        response["scope_fallback"] = True
    if recency_applied:
        response["recency_bias"] = "on"
    if params.exclude_tags:
        response["exclude_tags"] = params.exclude_tags
    if score_filter is not None:
        response["score_filter"] = score_filter
    response["tag_mode"] = params.tag_mode
    response["tag_match"] = params.tag_match
    profile = next((p for p in recall.profiles.values() if p is not None), None)
    if profile is not None:
        response["context_priority"] = context_priority_block(profile, recall.context_injected)
    warnings = list(params.warnings)
    if params.scope_fallback and params.tags and (params.query or params.queries) and not recall.vectors.available:
        warnings.append("'scope_fallback' was not used: it searches the vector channel, which this store "
                        "does not have (degraded)")
    if params.context and recall.backend.conn.execute(recall.backend.sql["kagura_context_exists"],
                                                      {"context": params.context}).fetchone()[0]:
        warnings.append(f"'context' is a ranking hint (memories tagged {params.context!r} rank higher), not a "
                        f"filter: recall searched every context, though {params.context!r} names one; "
                        "recall_v1's filters.context_id and `localmem list --context` keep to one context")
    missing = _missing_ids(recall.backend, params.priority_ids, results)
    if missing:
        warnings.append(f"'priority_ids' {', '.join(missing)} name{'s' if len(missing) == 1 else ''} no stored "
                        "memory: nothing to boost or fetch")
    if left_out:  # said where every interface shows warnings (CLI stderr, MCP text), too
        warnings.append(f"keyword score left out {', '.join(repr(t) for t in left_out)}: each is in more "
                        f"than {COMMON_TERM_ROWS:,} memories, too common to rank by")
    if warnings:
        response["warnings"] = warnings
    return response


def _missing_ids(backend: Any, memory_ids: list[str], results: list[dict[str, Any]]) -> list[str]:
    """The listed ids not in the answer that no stored memory has (those filtered out are not said: the
    spec's priority_ids never bypass filters)."""
    shown = {r["id"] for r in results}
    asked = [i for i in memory_ids if i not in shown]
    if not asked:
        return []
    found = {row[0] for row in backend.conn.execute(backend.sql["memory_ids_existing"], {"ids": json.dumps(asked)})}
    return [i for i in asked if i not in found]


def public_result(result: dict[str, Any]) -> dict[str, Any]:
    """A scored candidate as the answer shows it: internal ``_`` keys dropped but the query."""
    out = {k: v for k, v in result.items() if not k.startswith("_") or k == "_query"}
    out.setdefault("relations", [])
    return out
