"""Edges between memories: validate, write, read, remove and walk them.

The ``validate_*`` functions check a caller's arguments before any
transaction. Every other function takes the connection and statements and
runs inside the caller's transaction (or read snapshot); ids here are
integer keys (``pk``) unless a name says otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

import apsw

from ..errors import NotFoundError, ValidationError
from ..relations import AUTHORABLE_TYPES, DEFAULT_EXPAND_TYPES, RELATION_TYPES, SUPERSESSION_TYPES
from ..timeparse import format_timestamp
from ..validation import encode_json, validate_int, validate_metadata, validate_unit_interval, validate_uuid
from . import writes
from .walk import walk
from .hybrid_clock import wall_ms
from .records import MemoryRow, record_by_id, rows_as_dicts, to_record
from .statements import Statements

# Edge properties callers may set, across all relation types (AutoMem's registry).
EDGE_PROPERTIES = frozenset(
    p for rt in RELATION_TYPES.values() for p in rt.properties
) | {"timestamp", "observations", "role"}


@dataclass(frozen=True)
class Association:
    """A validated ``associate`` request: ``first -[relation]-> second``."""

    first: str
    second: str
    relation: str
    strength: float
    properties: dict[str, Any]


def validate_association(memory1_id: Any, memory2_id: Any, relation_type: Any, strength: Any,
                         properties: Mapping[str, Any]) -> Association:
    """``associate``'s arguments checked: ids, an authorable type, strength, known property names."""
    if memory1_id is None or memory2_id is None:
        raise ValidationError("'memory1_id' and 'memory2_id' are required")
    first = validate_uuid(memory1_id)
    second = validate_uuid(memory2_id)
    if first == second:
        raise ValidationError("Cannot associate a memory with itself")
    relation = (relation_type or "RELATES_TO").upper() if isinstance(relation_type, str) else None
    if relation not in AUTHORABLE_TYPES:
        raise ValidationError(f"Relation type must be one of {list(AUTHORABLE_TYPES)}")
    weight = validate_unit_interval(strength, "strength", 0.5)
    unknown = set(properties) - EDGE_PROPERTIES
    if unknown:
        raise ValidationError(
            f"Unknown relation propert{'y' if len(unknown) == 1 else 'ies'}: {', '.join(sorted(unknown))}"
        )
    props = validate_metadata({k: v for k, v in properties.items() if v is not None}) if properties else {}
    return Association(first, second, relation, weight, props)


def write_association(conn: apsw.Connection, sql: Statements, association: Association,
                      now: datetime) -> dict[str, Any]:
    """Create or update the association's edge at ``now`` (the store's clock, read once for the
    edge's ``updated_at`` and its stamp); ``associate``'s answer."""
    a = association
    src, dst, strength = conn.execute(sql["edge_ends_strength"],
                                      {"first": a.first, "second": a.second, "type": a.relation}).fetchone()
    if src is None or dst is None:
        edge_ends(conn, a.first, a.second)  # raises NotFoundError naming the missing memories
    previous = None if strength is None else float(strength)
    upsert_edge(conn, sql, src, dst, a.relation, a.strength, format_timestamp(now), a.properties,
                now_ms=wall_ms(now))
    cycle = supersession_cycle(conn, sql, src, dst, a.relation)
    result = {"memory1_id": a.first, "memory2_id": a.second, "relation_type": a.relation,
              "strength": a.strength, **a.properties}
    # Only when there is something to say, so a new edge's answer keeps its shape.
    if previous is not None:  # the pair had an edge of this type: it was updated, not created
        result.update({"updated": True, "previous_strength": previous})
    if cycle:
        result["warnings"] = cycle
    return result


def upsert_edge(conn: apsw.Connection, sql: Statements, src: int, dst: int, relation: str,
                strength: float, updated_at: str, properties: dict[str, Any], hlc: str | None = None,
                now_ms: int | None = None) -> None:
    """Write ``src -[relation]-> dst``, replacing the pair's edge of that type if there is one,
    with a new change number and a clock stamp (``hlc``: the stamp a sync copies it with;
    ``now_ms``: the store's clock, when the caller has just read it)."""
    conn.execute(sql["edge_upsert"], {
        "src": src, "dst": dst, "type": relation, "strength": strength, "updated_at": updated_at,
        "properties": encode_json(properties) if properties else "{}", "hlc": hlc, "now_ms": now_ms,
    })


def edge_ends(conn: apsw.Connection, first: str, second: str) -> tuple[int, int]:
    """The integer keys of two memories; ``NotFoundError`` naming those that do not exist."""
    pks = {row[0]: row[1] for row in conn.execute(
        "SELECT id, pk FROM memories WHERE id IN (?, ?)", (first, second))}
    missing = [memory_id for memory_id in dict.fromkeys((first, second)) if memory_id not in pks]
    if missing:
        raise NotFoundError(f"One or both memories do not exist (not found: {', '.join(missing)})")
    return pks[first], pks[second]


def supersession_cycle(conn: apsw.Connection, sql: Statements, src: int, dst: int,
                       relation: str) -> list[str]:
    """A warning when the supersession edge ``src -> dst`` closes a cycle (else none).

    On a cycle every memory has a current successor, so recall counts
    each as superseded and hides them all: almost never what was meant.
    """
    if relation not in SUPERSESSION_TYPES:
        return []
    path, cut = supersession_path(conn, sql, dst, src)
    if path is None:
        return [] if cut is None else [
            f"the supersession cycle check did not finish ({cut}): this edge may close a cycle "
            "through memories it did not reach"]
    start = conn.execute("SELECT id FROM memories WHERE pk = ?", (src,)).fetchone()[0]
    return [f"this edge closes a supersession cycle ({' -> '.join([start] + path)}): every memory "
            "on it counts as superseded by the next, so recall hides them all; remove one of the "
            "edges to break it"]


def validate_dissociation(memory1_id: Any, memory2_id: Any,
                          relation_type: Any) -> tuple[str, str, str | None]:
    """``dissociate``'s arguments checked: the two ids and the type (None: every type)."""
    if memory1_id is None or memory2_id is None:
        raise ValidationError("'memory1_id' and 'memory2_id' are required")
    first = validate_uuid(memory1_id, "memory1_id")
    second = validate_uuid(memory2_id, "memory2_id")
    relation: str | None = None
    if relation_type is not None:
        if not isinstance(relation_type, str) or not relation_type.strip():
            raise ValidationError("'type' must be a relation type name such as RELATES_TO")
        relation = relation_type.strip().upper()
    return first, second, relation


def dissociate(conn: apsw.Connection, sql: Statements, first: str, second: str,
               relation: str | None) -> dict[str, Any]:
    """Remove ``first -> second`` edges (one type, or all); ``NotFoundError`` when there are none.

    Returns ``dissociate``'s answer without its ``warnings``.
    """
    src, dst = edge_ends(conn, first, second)
    removed = delete_edges(conn, sql, src, dst, relation)
    if not removed:
        raise NotFoundError(f"No {relation + ' ' if relation else ''}edge from {first} to {second}")
    return {"memory1_id": first, "memory2_id": second, "relation_type": relation,
            "removed": len(removed), "removed_types": removed}


def validate_supersession(relation: Any, reason: Any) -> str:
    """``supersede``'s relation (upper-cased) after checking it and the reason."""
    relation = relation.upper() if isinstance(relation, str) else relation
    if relation not in SUPERSESSION_TYPES:
        raise ValidationError(f"'relation' must be one of {list(SUPERSESSION_TYPES)}")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 2000):
        raise ValidationError("'reason' must be a string of at most 2000 characters")
    return relation


def write_supersession(conn: apsw.Connection, sql: Statements, old_pk: int, old: dict[str, Any],
                       new_id: str, relation: str, reason: str | None, now: datetime,
                       has_vector_index: bool) -> dict[str, Any]:
    """Mark ``old`` superseded by the stored memory ``new_id`` and link them; ``supersede``'s answer.

    The old memory gets ``t_invalid = now`` and supersession metadata, and the
    edge ``old -[relation]-> new`` (strength 0.9) carries the reason.
    """
    metadata = dict(old["metadata"])
    metadata.update({"deprecated": True, "superseded_by": new_id, "supersede_relation": relation})
    if reason:
        metadata["supersede_reason"] = reason
    updated_old = MemoryRow.from_record({**old, "t_invalid": format_timestamp(now),
                                         "metadata": metadata,
                                         "updated_at": format_timestamp(now)})
    writes.update_memory(conn, sql, old_pk, MemoryRow.from_record(old),
                         updated_old, None, False, has_vector_index)
    found = conn.execute("SELECT pk FROM memories WHERE id = ?", (new_id,)).fetchone()
    if found is None:  # the existing successor was deleted meanwhile
        raise NotFoundError(f"Memory not found: {new_id}")
    new_pk = found[0]
    upsert_edge(conn, sql, old_pk, new_pk, relation, 0.9, format_timestamp(now),
                {"reason": reason} if reason else {}, now_ms=wall_ms(now))
    cycle = supersession_cycle(conn, sql, old_pk, new_pk, relation)
    result = {"memory_id": new_id, "superseded_memory_id": old["id"],
              "relation_type": relation, "association_created": True}
    if cycle:
        result["warnings"] = cycle
    return result


def validate_relation_types(value: Any) -> list[str]:
    """``related``'s ``relationship_types`` (a list or comma-separated text) as known type names;
    the default expansion types when none are given."""
    if value is None or value == "" or value == []:
        return list(DEFAULT_EXPAND_TYPES)
    raw = value.split(",") if isinstance(value, str) else value
    if not isinstance(raw, (list, tuple)) or not all(isinstance(t, str) for t in raw):
        raise ValidationError("'relationship_types' must be a list of strings")
    types = list(dict.fromkeys(t.strip().upper() for t in raw if t.strip()))
    unknown = [t for t in types if t not in RELATION_TYPES]
    if unknown:
        raise ValidationError(
            f"Unknown relationship type(s) {unknown}; valid: {sorted(RELATION_TYPES)}")
    return types


def related(conn: apsw.Connection, sql: Statements, memory_id: Any, relationship_types: Any,
            max_depth: Any, limit: Any, default_limit: int) -> dict[str, Any]:
    """``related``'s answer: memories within ``max_depth`` (1–3) undirected hops, most important first."""
    memory_id = validate_uuid(memory_id)
    types = validate_relation_types(relationship_types)
    notes: list[str] = []
    depth = validate_int(max_depth, "max_depth", default=1, minimum=1, maximum=3, notes=notes)
    limit = validate_int(limit, "limit", default=default_limit, minimum=1, maximum=200, notes=notes)
    start, _ = record_by_id(conn, sql, memory_id)  # NotFoundError when there is no such memory
    reached = walk(conn, sql, [start], types, directions=("out", "in"), max_depth=depth)
    nearest = {str(pk): hops for pk, hops in reached.depth.items() if pk != start}
    rows = rows_as_dicts(conn.execute(sql["related_memories"], {
        "found": json.dumps(nearest), "limit": limit}))
    found = [{**to_record(row), "depth": row["depth"]} for row in rows]
    result: dict[str, Any] = {"status": "success", "memory_id": memory_id, "count": len(found),
                              "related_memories": found, "relationship_types": types,
                              "max_depth": depth, "limit": limit}
    if reached.truncated:
        result["truncated"] = True
        notes.append(f"not every memory within {depth} hops was looked at: {reached.truncated}")
    if notes:
        result["warnings"] = notes
    return result


def delete_edges(conn: apsw.Connection, sql: Statements, src: int, dst: int,
                 relation: str | None) -> list[str]:
    """Remove ``src -> dst`` edges (one type, or all when ``relation`` is None); their types."""
    return sorted(row[0] for row in conn.execute(
        sql["edge_delete"], {"src": src, "dst": dst, "type": relation}))


def supersession_path(conn: apsw.Connection, sql: Statements, start: int,
                      target: int) -> tuple[list[str] | None, str | None]:
    """Public ids on a shortest supersession walk ``start -> ... -> target`` (None: none found),
    and why the walk stopped before it could tell (None: it finished)."""
    reached = walk(conn, sql, [start], SUPERSESSION_TYPES, directions=("out",), stop_at=target)
    if target not in reached.depth:
        return None, reached.truncated
    pks = reached.path_to(target)
    ids = dict(conn.execute(sql["memory_ids_by_pks"], {"pks": json.dumps(pks)}).fetchall())
    return [ids[pk] for pk in pks], None


def memory_edges(conn: apsw.Connection, sql: Statements, memory_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every edge at a memory: ``{"outgoing": [...], "incoming": [...]}``, newest first.

    Each entry names the memory at the other end (``memory_id`` and its
    ``summary``) with the edge's ``type``, ``strength``, ``updated_at`` and
    ``properties``.
    """
    edges: dict[str, list[dict[str, Any]]] = {"outgoing": [], "incoming": []}
    for row in rows_as_dicts(conn.execute(sql["memory_edges"], {"id": memory_id})):
        edges["outgoing" if row["direction"] == "out" else "incoming"].append({
            "memory_id": row["other_id"],
            "type": row["type"],
            "strength": row["strength"],
            "updated_at": row["updated_at"],
            "properties": json.loads(row["properties"]) if row["properties"] else {},
            "summary": row["other_summary"] or row["other_content"],
        })
    return edges
