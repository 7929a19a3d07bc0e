"""Writing one memory across every table that indexes it.

Each function runs inside the caller's transaction; a failure anywhere rolls
back the memory row, its tags, prefixes, FTS row, embedding and vec0 row
together, so the indexes never disagree.
"""

from __future__ import annotations

import json

import apsw

from .records import MemoryRow
from .statements import Statements
from .tags import compute_tag_prefixes


def _index_tags(conn: apsw.Connection, sql: Statements, pk: int, tags: list[str]) -> None:
    lowered = sorted({t.lower() for t in tags})
    conn.execute(sql["memory_tags_insert"], {"pk": pk, "tags": json.dumps(lowered)})
    conn.execute(
        sql["memory_tag_prefixes_insert"],
        {"pk": pk, "prefixes": json.dumps(compute_tag_prefixes(tags))},
    )


def _index_text(conn: apsw.Connection, sql: Statements, pk: int, row: MemoryRow) -> None:
    conn.execute(sql["fts_insert"], {"pk": pk, "content": row.content, "tags": " ".join(row.tags)})


def _set_embedding(
    conn: apsw.Connection, sql: Statements, pk: int, embedding: bytes | None, has_index: bool,
    *, replacing: bool = True,
) -> None:
    if has_index and replacing:
        conn.execute(sql["vector_delete"], {"pk": pk})
    if embedding is None:
        conn.execute(sql["embedding_delete"], {"pk": pk})
        return
    conn.execute(sql["embedding_upsert"], {"pk": pk, "embedding": embedding})
    if has_index:
        conn.execute(sql["vector_insert"], {"pk": pk, "embedding": embedding})


def insert_memory(
    conn: apsw.Connection, sql: Statements, row: MemoryRow, embedding: bytes | None, has_index: bool
) -> int:
    """Insert a memory and all its index rows; returns its integer key."""
    pk = conn.execute(sql["memory_insert"], row.bindings()).fetchone()[0]
    _index_tags(conn, sql, pk, row.tags)
    _index_text(conn, sql, pk, row)
    if embedding is not None:
        _set_embedding(conn, sql, pk, embedding, has_index, replacing=False)
    return pk


def update_memory(
    conn: apsw.Connection,
    sql: Statements,
    pk: int,
    old: MemoryRow,
    new: MemoryRow,
    embedding: bytes | None,
    embedding_changed: bool,
    has_index: bool,
) -> None:
    """Rewrite a memory; derived rows are rebuilt only where their source changed."""
    conn.execute(sql["memory_update"], {**new.bindings(), "pk": pk})
    if new.tags != old.tags:
        conn.execute(sql["memory_tags_delete"], {"pk": pk})
        conn.execute(sql["memory_tag_prefixes_delete"], {"pk": pk})
        _index_tags(conn, sql, pk, new.tags)
    if new.content != old.content or new.tags != old.tags:
        conn.execute(sql["fts_delete"], {"pk": pk})
        _index_text(conn, sql, pk, new)
    if embedding_changed:
        _set_embedding(conn, sql, pk, embedding, has_index)


def delete_memory(conn: apsw.Connection, sql: Statements, pk: int, has_index: bool) -> None:
    conn.execute(sql["fts_delete"], {"pk": pk})
    if has_index:
        conn.execute(sql["vector_delete"], {"pk": pk})
    conn.execute(sql["memory_delete"], {"pk": pk})
