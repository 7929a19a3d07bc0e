"""A batch of new rows into a table with insert triggers: one statement per chunk, not per row.

An INSERT into a table that has an insert trigger costs about 4.5 µs more per statement on
this project's memories table than the same INSERT without one, even when the trigger's
``WHEN`` is false (measured: docs/results/history.md, "bulk writes: one statement per
chunk"); an ``executemany`` pays that once per row. Here the rows go first into a table of the
connection's temporary database (no trigger, no index, seen by no other connection), then into
the real table with one ``INSERT … SELECT`` per chunk, in key order. The triggers still run for
every row, and everything happens inside the caller's transaction: a failure rolls back the
staged rows with the rest.

A staging ``name`` takes four statements: ``{name}_stage_create`` (``CREATE TEMP TABLE IF NOT
EXISTS``), ``{name}_stage`` (one row into it, the same parameters as the direct insert),
``{name}_insert_staged`` (the staged rows into the table) and ``{name}_stage_clear``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import apsw

from .statements import Statements

# Below this many rows the per-row statement is cheaper than staging's three extra statements.
STAGE_FROM_ROWS = 8
# Rows staged at once: bounds the temporary table's memory whatever the batch's size.
CHUNK_ROWS = 2048


def insert_rows(conn: apsw.Connection, sql: Statements, name: str, direct: str,
                rows: Sequence[Mapping[str, Any]], staged: str | None = None) -> None:
    """Insert ``rows`` (parameter mappings) in their order, inside the caller's transaction:
    by the statement ``direct`` (its text) one row at a time for a few rows, else staged
    through the statements of ``name``. ``staged``: the text of ``{name}_insert_staged`` when
    the caller fills its slots."""
    if len(rows) < STAGE_FROM_ROWS:
        if rows:
            conn.executemany(direct, rows)
        return
    conn.execute(sql[f"{name}_stage_create"])
    clear = sql[f"{name}_stage_clear"]
    conn.execute(clear)  # a failed batch's rows went with its rollback; this costs nothing then
    for start in range(0, len(rows), CHUNK_ROWS):
        conn.executemany(sql[f"{name}_stage"], rows[start:start + CHUNK_ROWS])
        conn.execute(staged or sql[f"{name}_insert_staged"])
        conn.execute(clear)
