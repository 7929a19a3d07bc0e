"""A batch of rows into a table with triggers: one statement per chunk, not one per row.

An INSERT into a table that has an insert trigger costs about 4.5 µs more per statement on
this project's memories table than the same INSERT without one, even when the trigger's
``WHEN`` is false (docs/results/history.md, "Bulk writes: one statement per chunk"), and an
UPDATE of a table with an update trigger pays it too; an ``executemany`` pays it once per
row. Here the rows go first into a table of the connection's temporary database (no trigger,
no index, seen by no other connection), then into the real table with one ``INSERT … SELECT``
(or ``UPDATE … FROM``) per chunk, in order. The triggers still run for every row, and
everything happens inside the caller's transaction: a failure rolls back the staged rows with
the rest.

A staging ``name`` has the statements ``{name}_stage_create`` (``CREATE TEMP TABLE IF NOT
EXISTS``), ``{name}_stage`` (one row into it, with the per-row statement's parameters) and
``{name}_stage_clear``; the caller gives the statement that writes the staged rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

import apsw

from .statements import Statements

# Below this many rows the per-row statement is cheaper than staging's extra statements.
STAGE_FROM_ROWS = 8
# Rows staged at once: bounds the temporary table's memory whatever the batch's size.
CHUNK_ROWS = 2048


def write_rows(conn: apsw.Connection, sql: Statements, rows: Iterable[Mapping[str, Any]], *,
               direct: str, name: str, staged: str, stage: str | None = None) -> None:
    """Write ``rows`` (parameter mappings, read once, a chunk at a time) in their order inside
    the caller's transaction: with the statement ``direct`` (its text) once per row when there
    are few, else through the staging table ``name`` and the statement ``staged`` (its text)
    once per chunk. ``stage``: the statement that stages one row, when not ``{name}_stage``."""
    remaining = iter(rows)
    chunk = list(islice(remaining, STAGE_FROM_ROWS))
    if len(chunk) < STAGE_FROM_ROWS:
        if chunk:
            conn.executemany(direct, chunk)
        return
    conn.execute(sql[f"{name}_stage_create"])
    clear = sql[f"{name}_stage_clear"]
    conn.execute(clear)  # a failed batch's rows went with its rollback; this costs nothing then
    chunk.extend(islice(remaining, CHUNK_ROWS - len(chunk)))
    while chunk:
        conn.executemany(sql[stage or f"{name}_stage"], chunk)
        conn.execute(staged)
        conn.execute(clear)
        chunk = list(islice(remaining, CHUNK_ROWS))
