"""Writing one memory across every table that indexes it.

Each function runs inside the caller's transaction; a failure anywhere rolls
back the memory row, its tags, prefixes, FTS row, embedding and vector code
together, so the indexes never disagree.
"""

from __future__ import annotations

import json

import apsw

from . import vector_index
from ..metadata_search import metadata_index_terms
from .records import MemoryRow
from .statements import Statements
from ..tags import compute_tag_prefixes
from .threads import affected_rows, write_text_rows


def _index_tags(conn: apsw.Connection, sql: Statements, pk: int, tags: list[str]) -> None:
    lowered = sorted({t.lower() for t in tags})
    conn.execute(sql["memory_tags_insert"], {"pk": pk, "tags": json.dumps(lowered)})
    conn.execute(
        sql["memory_tag_prefixes_insert"],
        {"pk": pk, "prefixes": json.dumps(compute_tag_prefixes(tags))},
    )


def _index_metadata(conn: apsw.Connection, sql: Statements, pk: int, metadata: dict) -> None:
    terms = metadata_index_terms(metadata)
    if terms:
        conn.execute(sql["metadata_terms_insert"], {"pk": pk, "terms": json.dumps(terms)})


def _set_embedding(
    conn: apsw.Connection, sql: Statements, pk: int, embedding: bytes | None, has_index: bool,
    *, replacing: bool = True,
) -> None:
    if has_index and replacing:
        vector_index.delete(conn, sql, pk)
    if embedding is None:
        conn.execute(sql["embedding_delete"], {"pk": pk})
        return
    conn.execute(sql["embedding_upsert"], {"pk": pk, "embedding": embedding})
    if has_index:
        vector_index.insert(conn, sql, pk, embedding)


def insert_memories(
    conn: apsw.Connection, sql: Statements, rows: list[MemoryRow],
    embeddings: list[bytes | None], has_index: bool,
) -> list[int]:
    """Insert memories and all their index rows; returns their integer keys.

    Full-text rows are written last, in one pass, because a threaded memory's
    row (and its neighbours') carries the text of its thread neighbours.
    """
    pks: list[int] = []
    threaded: list[int] = []
    for row, embedding in zip(rows, embeddings):
        pk = conn.execute(sql["memory_insert"], row.bindings()).fetchone()[0]
        pks.append(pk)
        _index_tags(conn, sql, pk, row.tags)
        _index_metadata(conn, sql, pk, row.metadata)
        if embedding is not None:
            _set_embedding(conn, sql, pk, embedding, has_index, replacing=False)
        if row.thread is not None:
            threaded.append(pk)
    dims = next((len(e) // 4 for e in embeddings if e is not None), None)
    if has_index and dims is not None:
        vector_index.check_calibration(conn, sql, dims)
    stamps = [row.timestamp for row in rows if row.thread is not None]
    neighbours = affected_rows(conn, sql, threaded, stamps)
    for pk in neighbours - set(pks):
        conn.execute(sql["fts_delete"], {"pk": pk})
    write_text_rows(conn, sql, set(pks) | neighbours, stamps)
    return pks


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
    text_changed = (new.content != old.content or new.tags != old.tags
                    or new.thread != old.thread
                    or (new.thread is not None and new.timestamp != old.timestamp))
    before = affected_rows(conn, sql, [pk], [old.timestamp]) if text_changed and old.thread else set()
    conn.execute(sql["memory_update"], {**new.bindings(), "pk": pk})
    if new.tags != old.tags:
        conn.execute(sql["memory_tags_delete"], {"pk": pk})
        conn.execute(sql["memory_tag_prefixes_delete"], {"pk": pk})
        _index_tags(conn, sql, pk, new.tags)
    if new.metadata != old.metadata:
        conn.execute(sql["metadata_terms_delete"], {"pk": pk})
        _index_metadata(conn, sql, pk, new.metadata)
    if text_changed:
        after = affected_rows(conn, sql, [pk], [new.timestamp]) if new.thread else set()
        write_text_rows(conn, sql, before | after | {pk}, [old.timestamp, new.timestamp])
    if embedding_changed:
        _set_embedding(conn, sql, pk, embedding, has_index)
    elif has_index and new.timestamp != old.timestamp:
        vector_index.set_time(conn, sql, pk)


def delete_memory(conn: apsw.Connection, sql: Statements, pk: int, row: MemoryRow,
                  has_index: bool) -> None:
    neighbours = affected_rows(conn, sql, [pk], [row.timestamp]) if row.thread else set()
    conn.execute(sql["fts_delete"], {"pk": pk})
    if has_index:
        vector_index.delete(conn, sql, pk)
    conn.execute(sql["memory_delete"], {"pk": pk})
    write_text_rows(conn, sql, neighbours - {pk}, [row.timestamp])
