"""Reads for browsing a store: memories per day, the most connected ones, edges among a set.

Each function takes the connection and statements and runs inside the
caller's read snapshot; ids here are public ids.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from .records import rows_as_dicts, to_record
from .statements import Statements


def memories_per_day(conn: apsw.Connection, sql: Statements) -> list[tuple[str, int]]:
    """``(YYYY-MM-DD, count)`` for every day a memory was made on, oldest first."""
    return [(row[0], int(row[1])) for row in conn.execute(sql["browse_timeline"])]


def most_connected(conn: apsw.Connection, sql: Statements, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` memories with the most edges, each record with its ``degree``."""
    return [{**to_record(row), "degree": int(row["degree"])}
            for row in rows_as_dicts(conn.execute(sql["browse_most_connected"], {"limit": limit}))]


def edges_among(conn: apsw.Connection, sql: Statements, ids: list[str]) -> list[dict[str, Any]]:
    """Every edge ``source -[type]-> target`` with both ends in ``ids``."""
    return list(rows_as_dicts(conn.execute(sql["browse_edges_among"], {"ids": json.dumps(ids)})))
