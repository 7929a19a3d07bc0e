"""The change log of a batch of new memories, written in one pass instead of row by row.

Every new memory gets a ``memory_changes`` row (its change number and hybrid-clock stamp:
docs/sync.md), which sync and push read. The insert trigger writes it one row at a time,
each with its own clock step; ``batch_logged`` has the trigger skip the batch's keys and
writes their rows afterwards with one statement: the same change numbers and stamp counters
in key order, under one wall-clock reading (migration 0016).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from .statements import Statements


@contextmanager
def batch_logged(conn: apsw.Connection, sql: Statements, first_pk: int, rows: int) -> Iterator[None]:
    """Insert ``rows`` memories with keys from ``first_pk`` on inside this block (run in the
    caller's transaction); on leaving it, every memory inserted meanwhile is logged, also when
    an insert failed part-way (the rows already written are logged, the mark is cleared).
    A single row is left to the trigger (its two statements cost less than the batch's four),
    and so is a write outside a transaction, where the mark could outlive a failed insert."""
    if rows < 2 or not conn.in_transaction:
        yield
        return
    conn.execute(sql["change_log_batch_open"], {"first": first_pk})
    try:
        yield
    finally:
        if conn.in_transaction:  # else SQLite rolled it back, the mark with it
            conn.execute(sql["change_log_batch_close"])
