"""Writing one memory across every table that indexes it.

Each function runs inside the caller's transaction; a failure anywhere rolls
back the memory row, its tags, prefixes, FTS row, embedding, vector code and
token codes together, so the indexes never disagree.
"""

from __future__ import annotations

import json

import apsw

from . import dedup_keys, staged_rows, vector_index
from .change_log import batch_logged
from ..errors import ValidationError
from ..metadata_search import metadata_index_terms
from .records import MemoryRow
from .statements import Statements
from ..tags import compute_tag_prefixes
from .threads import affected_rows, fresh_text_row, insert_text_rows, write_text_rows

TokenCodes = tuple[int, bytes]  # (token count, packed sign bits): storage/token_codes.py


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


def _index_vectors(conn: apsw.Connection, sql: Statements, pairs: list[tuple[int, bytes]]) -> None:
    """Hand a batch's (pk, embedding) pairs to the vector index: the one place inserts reach it.

    The memory rows are already written (the index reads their timestamps).
    """
    vector_index.insert_many(conn, sql, pairs)


def check_ids_free(conn: apsw.Connection, sql: Statements, rows: list[MemoryRow]) -> None:
    """One lookup for the batch; the error names the first taken id in batch order."""
    if not rows:
        return
    taken = {r[0] for r in conn.execute(sql["memory_ids_existing"],
                                        {"ids": json.dumps([row.id for row in rows])})}
    for row in rows:
        if row.id in taken:
            raise ValidationError(f"A memory with id {row.id} already exists")


def insert_memories(
    conn: apsw.Connection, sql: Statements, rows: list[MemoryRow],
    embeddings: list[bytes | None], has_index: bool,
    token_codes: list[TokenCodes | None] | None = None,
) -> list[int]:
    """Insert memories and all their index rows; returns their integer keys.

    Each table gets one ``executemany`` per batch. The keys are assigned here
    as SQLite would (one past the largest), so the tag, prefix and metadata
    rows are built in the same pass over the batch; they are inserted in key
    order, each a short step from the last in its b-tree. Full-text rows are
    written last (``_index_text``).
    """
    if not rows:
        return []
    first = (conn.execute(sql["memory_max_pk"]).fetchone()[0] or 0) + 1
    pks = list(range(first, first + len(rows)))
    memory_rows: list[dict] = []
    key_rows: list[dict] = []
    tag_rows: list[tuple[str, int]] = []
    prefix_rows: list[tuple[str, int]] = []
    term_rows: list[tuple[str, int]] = []
    vectors: list[tuple[int, bytes]] = []
    threaded: list[int] = []
    stamps: list[str] = []
    unthreaded_text: list[tuple] = []
    for pk, row, embedding in zip(pks, rows, embeddings):
        bindings = row.bindings()
        bindings["pk"] = pk
        memory_rows.append(bindings)
        key_rows.append({"pk": pk, "key": dedup_keys.row_key(row, bindings["thread"])})
        tag_rows.extend((tag, pk) for tag in {t.lower() for t in row.tags})
        prefix_rows.extend((prefix, pk) for prefix in compute_tag_prefixes(row.tags))
        term_rows.extend((term, pk) for term in metadata_index_terms(row.metadata))
        if embedding is not None:
            vectors.append((pk, embedding))
        if bindings["thread"] is not None:
            threaded.append(pk)
            stamps.append(row.timestamp)
        else:
            unthreaded_text.append(fresh_text_row(pk, row))
    with batch_logged(conn, sql, first, len(rows)):  # their change-log rows in one pass, not by trigger
        staged_rows.write_rows(conn, sql, memory_rows, direct=sql["memory_insert"], name="memory",
                               staged=sql["memory_insert_staged"])
    conn.executemany(sql["dedup_key_upsert"], key_rows)
    # OR IGNORE as the per-memory statements had it; a batch's keys are new, so nothing is ignored.
    conn.executemany(sql["memory_tag_insert"], sorted(tag_rows))
    conn.executemany(sql["memory_tag_prefix_insert"], sorted(prefix_rows))
    conn.executemany(sql["metadata_term_insert"], sorted(term_rows))
    if vectors:
        conn.executemany(sql["embedding_upsert"], [{"pk": pk, "embedding": e} for pk, e in vectors])
        if has_index:
            _index_vectors(conn, sql, vectors)
            vector_index.check_calibration(conn, sql, len(vectors[0][1]) // 4)
    if token_codes:
        conn.executemany(sql["token_codes_insert"], [
            {"pk": pk, "tokens": codes[0], "codes": codes[1]}
            for pk, codes in zip(pks, token_codes) if codes is not None])
    _index_text(conn, sql, pks, threaded, stamps, unthreaded_text)
    return pks


def _index_text(conn: apsw.Connection, sql: Statements, pks: list[int], threaded: list[int],
                stamps: list[str], unthreaded_text: list[tuple]) -> None:
    """Full-text rows of new memories, written last: a threaded memory's row (and its
    neighbours') carries the text of its thread neighbours, which the query reads; the
    others' rows are made in Python (``fresh_text_row``)."""
    if not threaded:  # the common bulk case: every row is known without a query
        insert_text_rows(conn, sql, (), unthreaded_text)
        return
    neighbours = affected_rows(conn, sql, threaded, stamps)
    new = set(pks)
    for pk in sorted(neighbours - new):
        conn.execute(sql["fts_delete"], {"pk": pk})
    # New keys have no full-text row to delete.
    write_text_rows(conn, sql, set(threaded) | neighbours, stamps, fresh=new, known=unthreaded_text)


def update_memory(
    conn: apsw.Connection,
    sql: Statements,
    pk: int,
    old: MemoryRow,
    new: MemoryRow,
    embedding: bytes | None,
    embedding_changed: bool,
    has_index: bool,
    token_codes: TokenCodes | None = None,
) -> None:
    """Rewrite a memory; derived rows are rebuilt only where their source changed.

    A changed embedding replaces the token codes with ``token_codes`` (none:
    the old ones went with the old text)."""
    text_changed = (new.content != old.content or new.tags != old.tags
                    or new.thread != old.thread
                    or (new.thread is not None and new.timestamp != old.timestamp))
    before = affected_rows(conn, sql, [pk], [old.timestamp]) if text_changed and old.thread else set()
    conn.execute(sql["memory_update"], {**new.bindings(), "pk": pk})
    new_key = dedup_keys.row_key(new, new.thread)
    if new_key != dedup_keys.row_key(old, old.thread):
        dedup_keys.insert_keys(conn, sql, [(pk, new_key)])
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
        conn.execute(sql["token_codes_delete"], {"pk": pk})
        if token_codes is not None:
            conn.execute(sql["token_codes_insert"], {"pk": pk, "tokens": token_codes[0],
                                                    "codes": token_codes[1]})
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
