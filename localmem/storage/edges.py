"""Edges between memories: read one, remove some, list a memory's, find supersession paths.

Each function takes the connection and statements and runs inside the
caller's transaction (or read snapshot); ids here are integer keys (``pk``)
unless a name says otherwise.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from .records import rows_as_dicts
from .statements import Statements

# How far a supersession-cycle check walks; chains are short, this bounds a dense graph.
CYCLE_CHECK_DEPTH = 32


def edge_strength(conn: apsw.Connection, sql: Statements, src: int, dst: int,
                  relation: str) -> float | None:
    """The strength of the edge ``src -[relation]-> dst``, or None when there is none."""
    row = conn.execute(sql["edge_get"], {"src": src, "dst": dst, "type": relation}).fetchone()
    return None if row is None else float(row[0])


def delete_edges(conn: apsw.Connection, sql: Statements, src: int, dst: int,
                 relation: str | None) -> list[str]:
    """Remove ``src -> dst`` edges (one type, or all when ``relation`` is None); their types."""
    return sorted(row[0] for row in conn.execute(
        sql["edge_delete"], {"src": src, "dst": dst, "type": relation}))


def supersession_path(conn: apsw.Connection, sql: Statements, start: int, target: int) -> list[str] | None:
    """Public ids on the shortest supersession walk ``start -> ... -> target``, or None."""
    row = conn.execute(sql["supersession_path"], {
        "start": start, "target": target, "max_depth": CYCLE_CHECK_DEPTH}).fetchone()
    return None if row is None else row[0].strip(",").split(",")


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
