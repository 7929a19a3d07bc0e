"""Exact-duplicate keys: a memory's content, normalised, with the scope it was stored in.

Two memories are exact duplicates when their keys are equal (docs/dedup.md):
the same normalised content (``normalise_content``), the same ``context``, the
same tag set (compared case-insensitively, in any order), and, for a
conversation turn (a memory with a thread), the same thread and the same
``timestamp`` -- two identical turns at different times are two turns.

The key is a truncated SHA-256 digest kept in ``memory_dedup_keys`` (schema: migration
0009), written with the memory in the same transaction (storage/writes.py).
The index on it is not unique: a store may already hold copies, and a copy
that was superseded, archived or expired is history, not a duplicate; the
write transaction (BEGIN IMMEDIATE) makes check-then-insert atomic instead.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any, Iterable

import apsw

from .records import MemoryRow
from .statements import Statements
from .threads import thread_key

# Sentence-ending marks a writer adds or drops without changing the fact (with the spaces
# between them); "?" is kept (a question is not the statement), and so is every mark inside.
_TRAILING_CHARACTERS = " .!。！…"


def normalise_content(content: str) -> str:
    """The content as dedup compares it: Unicode NFKC, invisible format characters
    (zero-width spaces, BOM, soft hyphens) removed, case-folded, every run of whitespace
    one space, ends trimmed, trailing ``.``/``!``/``…`` dropped."""
    text = content
    if not text.isascii():  # ASCII is its own NFKC form and has no format characters
        text = unicodedata.normalize("NFKC", text)
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    # str.split() splits at the characters \s matches (both use Python's isspace), so after
    # the join the only whitespace left is single spaces between words.
    text = " ".join(text.casefold().split())
    stripped = text.rstrip(_TRAILING_CHARACTERS)
    return stripped if stripped else text  # "!!!" stays itself


# One JSON string as json.dumps(..., ensure_ascii=False) writes it (the function it calls).
_json_string = json.encoder.encode_basestring


def key_text(content: str, context: str, tags: list[str], thread: str | None, timestamp: str) -> str:
    """The text a key hashes: ``[content, [context, tags, [thread, timestamp] or null]]`` as
    ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` writes it, put together
    from its strings (a third of the encoder's time per row: tests/test_write_fast_paths.py)."""
    tag_list = ",".join(map(_json_string, sorted({t.lower() for t in tags})))
    where = f"[{_json_string(thread)},{_json_string(timestamp)}]" if thread else "null"
    return f"[{_json_string(normalise_content(content))},[{_json_string(context)},[{tag_list}],{where}]]"


def dedup_key(content: str, context: str, tags: Iterable[str], metadata: dict[str, Any],
              timestamp: str) -> bytes:
    """The key equal memories in one scope share (see the module's rules): the first 16 bytes
    of a SHA-256 (a chance collision, about 2^-64 per pair of distinct texts at a billion
    memories, is below every other failure the store has; the index stays small)."""
    tags = list(tags)
    return _key(content, context, tags, thread_key(context, metadata, tags), timestamp)


def _key(content: str, context: str, tags: list[str], thread: str | None, timestamp: str) -> bytes:
    return hashlib.sha256(key_text(content, context, tags, thread, timestamp).encode("utf-8")).digest()[:16]


def row_key(row: MemoryRow, thread: str | None) -> bytes:
    """``dedup_key`` of a row whose thread key (``row.thread``) the caller already has."""
    return _key(row.content, row.context, row.tags, thread, row.timestamp)


def insert_keys(conn: apsw.Connection, sql: Statements, pairs: list[tuple[int, bytes]]) -> None:
    conn.executemany(sql["dedup_key_upsert"], [{"pk": pk, "key": key} for pk, key in pairs])


def backfill(conn: apsw.Connection, sql: Statements, batch: int = 2000) -> int:
    """Keys for every memory (migration 0009); returns how many were written."""
    written = 0
    last = 0
    while True:
        rows = list(conn.execute(sql["dedup_backfill_rows"], {"after": last, "limit": batch}))
        if not rows:
            return written
        pairs = []
        for pk, content, context, tags, metadata, timestamp in rows:
            last = pk
            try:
                tag_list, meta = json.loads(tags or "[]"), json.loads(metadata or "{}")
            except ValueError:
                continue  # a damaged row gets no key: it is never a dedup target
            if not isinstance(tag_list, list) or not isinstance(meta, dict):
                continue
            tag_list = [t for t in tag_list if isinstance(t, str)]
            pairs.append((pk, dedup_key(content or "", context, tag_list, meta, timestamp)))
        insert_keys(conn, sql, pairs)
        written += len(pairs)
