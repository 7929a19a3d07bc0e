"""Threads: memories that belong to one conversation or session.

A memory's thread comes from ``metadata.thread`` (or ``metadata.session``),
else from a ``thread:<id>`` (or ``session:<id>``) tag, within its context.
Thread order is (timestamp, insertion order); a gap of more than a day
between neighbours starts a new segment, so two threads that happen to share
an id (session 1 of two conversations) do not run together. Each memory's
full-text row carries the content of up to three neighbours on each side in
lower-weighted columns, so a reply is found by the words of the question it
answers. Memories without a thread cost nothing extra.
"""

from __future__ import annotations

import heapq
import json
from datetime import timedelta
from typing import Any, Iterable

import apsw

from .statements import Statements
from ..timeparse import format_timestamp, parse_timestamp, shifted

THREAD_FIELDS = ("thread", "session")
THREAD_TAG_PREFIXES = ("thread:", "session:")
MAX_GAP_DAYS = 1.0
CONTEXT_SPAN = 3
# The text context of a memory reaches at most CONTEXT_SPAN neighbours, each
# at most MAX_GAP_DAYS from the next, so rows further than this never matter.
BAND = timedelta(days=MAX_GAP_DAYS * (CONTEXT_SPAN + 1))


def thread_key(context: str, metadata: dict[str, Any], tags: Iterable[str]) -> str | None:
    """The thread a memory belongs to, or None."""
    for field in THREAD_FIELDS:
        value = metadata.get(field)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return f"{context}\x1f{str(value).strip()}"
    for tag in tags:
        lowered = tag.lower()
        for prefix in THREAD_TAG_PREFIXES:
            if lowered.startswith(prefix) and len(tag) > len(prefix):
                return f"{context}\x1f{tag[len(prefix):].strip()}"
    return None


def _band(timestamps: Iterable[str], reach: int) -> tuple[str | None, str | None]:
    stamps = [parse_timestamp(t) for t in timestamps]
    if not stamps:
        return None, None
    return (format_timestamp(shifted(min(stamps), -reach * BAND)),
            format_timestamp(shifted(max(stamps), reach * BAND)))


def _params(pks: list[int], timestamps: Iterable[str], reach: int = 1) -> dict[str, Any]:
    start, end = _band(timestamps, reach)
    return {"pks": json.dumps(pks), "band_start": start, "band_end": end,
            "max_gap_days": MAX_GAP_DAYS}


def affected_rows(conn: apsw.Connection, sql: Statements, pks: list[int],
                  timestamps: Iterable[str]) -> set[int]:
    """The memories whose text context depends on the given (threaded) memories."""
    if not pks:
        return set()
    return {row[0] for row in conn.execute(sql["thread_neighbours"], _params(pks, timestamps))}


def fresh_text_row(pk: int, row: Any) -> tuple:
    """The full-text row of a new memory outside any thread (a ``MemoryRow``), as
    thread_text_rows.sql makes it: content, the tags joined by spaces, no neighbours;
    then its context, by which (and the key) rows are written in order."""
    return (pk, row.content, " ".join(row.tags), "", "", "", "", "", "", row.context)


def _text_order(row: tuple) -> tuple[str, int]:
    return row[-1], row[0]


def insert_text_rows(conn: apsw.Connection, sql: Statements, queried: Iterable[tuple],
                     made: list[tuple] = ()) -> None:
    """Write full-text rows (each with its context last) in the order they have always been
    written in: by context, then key. ``queried`` rows come in that order from
    thread_text_rows.sql; ``made`` ones (``fresh_text_row``) are merged in. FTS5 starts a
    new segment whenever a key comes below the last one, so the order decides the bytes."""
    rows = heapq.merge(queried, sorted(made, key=_text_order), key=_text_order) if made else queried
    conn.executemany(sql["fts_insert"], (row[:-1] for row in rows))


def write_text_rows(conn: apsw.Connection, sql: Statements, pks: Iterable[int] | None,
                    timestamps: Iterable[str] = (), *, fresh: Iterable[int] = (),
                    known: list[tuple] = ()) -> int:
    """(Re)write the full-text rows of the given memories, or of all when ``pks`` is None.

    ``timestamps`` are those of the memories whose write caused this; the
    rows to rewrite lie within one band of them and read context from one
    band further, hence the doubled reach. ``fresh`` memories were inserted
    in this transaction: they have no row to delete first. ``known``: rows
    already made (``fresh_text_row``) of other fresh memories, written with
    the queried ones in the query's order.
    """
    if pks is None:
        params = {"pks": None, "band_start": None, "band_end": None, "max_gap_days": MAX_GAP_DAYS}
    else:
        pks = sorted(set(pks))
        if not pks:
            return 0
        params = _params(pks, timestamps, reach=2)
        skip = set(fresh)
        conn.executemany(sql["fts_delete"], [{"pk": pk} for pk in pks if pk not in skip])
    rows = list(conn.execute(sql["thread_text_rows"], params))
    insert_text_rows(conn, sql, rows, list(known))
    return len(rows)
