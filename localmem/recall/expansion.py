"""Graph expansion of recall seeds (one undirected hop over default_expand edges)
and the hydration of outgoing-edge summaries on returned results."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from ..storage.records import rows_as_dicts, to_record
from ..relations import DEFAULT_EXPAND_TYPES
from .params import RecallParams
from .scope import passes_scope

if TYPE_CHECKING:
    from ..storage.backend import Backend

RELATION_SUMMARY_CONTENT = 160


def expand_relations(backend: "Backend", params: RecallParams, seeds: list[dict[str, Any]],
                     seen: set[str], score: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """Neighbours of the seeds, scored and sorted, at most ``expansion_limit`` in all.

    Per seed, the newest ``relation_limit`` edges are walked (in SQL). A
    neighbour reached from several seeds keeps its best relation score and
    lists every edge it came by. Strength and importance minimums, the time
    window and exclude_tags always apply; the tag scope only with
    ``expand_respect_tags``.
    """
    if not seeds:
        return []
    seed_scores = {s["id"]: float(s.get("final_score", 0.0)) for s in seeds}
    rows = rows_as_dicts(backend.conn.execute(backend.sql["graph_neighbours"], {
        "ids": json.dumps([s["id"] for s in seeds]),
        "types": json.dumps(list(DEFAULT_EXPAND_TYPES)),
        "excluded_types": json.dumps(list(backend.config.excluded_types)),
        "per_seed_limit": params.relation_limit,
    }))
    expanded: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["id"] in seen:
            continue
        strength = float(row["relation_strength"] or 0.0)
        if params.expand_min_strength is not None and strength < params.expand_min_strength:
            continue
        memory = to_record(row)
        if params.expand_min_importance is not None and memory["importance"] < params.expand_min_importance:
            continue
        if not passes_scope(memory, params, backend.config.excluded_types,
                            with_tags=params.expand_respect_tags):
            continue
        seed_id = row["seed_id"]
        relation_score = strength + max(seed_scores[seed_id], 0.0) * 0.25
        edge = {"type": row["relation_type"], "strength": strength, "from": seed_id,
                "seed_rank": row["seed_rank"], "seed_score": seed_scores[seed_id],
                "direction": row["direction"]}
        if row["id"] in expanded:
            current = expanded[row["id"]]
            current["relation_score"] = max(current["relation_score"], relation_score)
            current["match_score"] = current["relation_score"]
            current["relations"].append(edge)
            current["related_to"].append(edge)
            continue
        if len(expanded) >= params.expansion_limit:
            continue
        expanded[row["id"]] = {
            "id": row["id"], "_pk": row["pk"], "memory": memory, "match_type": "relation",
            "match_score": relation_score, "relation_score": relation_score, "source": "graph",
            "relations": [edge], "related_to": [edge], "_similarity": None,
        }
    results = list(expanded.values())
    for result in results:
        score(result)
    results.sort(key=lambda r: -r["final_score"])
    return results


def relation_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A compact view of an edge's target memory (AutoMem's _summarize_relation_node)."""
    memory = to_record(row)
    summary: dict[str, Any] = {
        "id": memory["id"], "type": memory["type"], "timestamp": memory["timestamp"],
        "summary": memory["summary"], "importance": memory["importance"],
        "confidence": memory["confidence"], "tags": memory["tags"][:5],
    }
    if not memory["summary"]:
        content = memory["content"]
        if len(content) > RELATION_SUMMARY_CONTENT:
            cut = content[:RELATION_SUMMARY_CONTENT - 3]
            content = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
        summary["content"] = content
    return summary


def hydrate_relations(backend: "Backend", results: list[dict[str, Any]]) -> None:
    """Fill ``relations`` of results that have none with their outgoing edges (one query)."""
    needing = [r for r in results if not r.get("relations")]
    if not needing:
        return
    by_source: dict[str, list[dict[str, Any]]] = {}
    rows = rows_as_dicts(backend.conn.execute(backend.sql["relations_outgoing"], {
        "ids": json.dumps([r["id"] for r in needing]), "limit": backend.config.relation_limit}))
    for row in rows:
        by_source.setdefault(row["source_id"], []).append({
            "type": row["relation_type"],
            "strength": row["relation_strength"],
            "memory": relation_summary(row),
        })
    for result in needing:
        result["relations"] = by_source.get(result["id"], [])
