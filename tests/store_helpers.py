"""Shared helpers for the MemoryStore tests: table snapshots and index checks.

Not a test module (no ``test_`` prefix); imported as ``tests.store_helpers``.
"""

from __future__ import annotations

import json
import math
from array import array
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

from localmem import LocalMemError, MemoryStore
from localmem.tags import compute_tag_prefixes

FIXED_NOW = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
FIXED_ISO = "2024-05-01T12:00:00+00:00"

DIMS = 384  # the hash embedder's default dimension


def unit(*pairs: tuple[int, float], dims: int = DIMS) -> list[float]:
    """A ``dims``-long vector with the given (index, value) entries, normalised."""
    vector = [0.0] * dims
    for index, value in pairs:
        vector[index] = value
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


# Every ordinary table a write may touch; the two virtual tables are added below.
TABLES = ("memories", "memory_tags", "memory_tag_prefixes", "edges", "memory_embeddings", "meta")


class Clock:
    """A settable clock: ``store = MemoryStore(..., clock=clock)``; ``clock.advance(minutes=5)``."""

    def __init__(self, now: datetime = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now

    @property
    def iso(self) -> str:
        return self.now.isoformat()


def new_store(path: str = ":memory:", *, embedder: Any = "hash",
              clock: Callable[[], datetime] | None = None, **kwargs: Any) -> MemoryStore:
    return MemoryStore(path, embedder=embedder, clock=clock or (lambda: FIXED_NOW), **kwargs)


def scalar(store: MemoryStore, sql: str, params: Any = ()) -> Any:
    return store.conn.execute(sql, params).fetchone()[0]


def has_table(store: MemoryStore, name: str) -> bool:
    return scalar(store, "SELECT count(*) FROM sqlite_master WHERE name = ?", (name,)) == 1


def _rows(store: MemoryStore, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in store.conn.execute(sql)), key=repr)


def snapshot(store: MemoryStore) -> dict[str, Any]:
    """Every row of every table (virtual tables: their keys and counts)."""
    snap: dict[str, Any] = {table: _rows(store, f"SELECT * FROM {table}") for table in TABLES}
    snap["memories_fts rowids"] = _rows(store, "SELECT rowid FROM memories_fts")
    snap["memories_fts count"] = scalar(store, "SELECT count(*) FROM memories_fts")
    if has_table(store, "vector_codes"):
        snap["vector_codes"] = _rows(store, "SELECT pk, codes FROM vector_codes")
        snap["vector_codes count"] = scalar(store, "SELECT count(*) FROM vector_codes")
    for table in ("token_codes", "token_centre"):
        if has_table(store, table):
            snap[table] = _rows(store, f"SELECT * FROM {table}")
    return snap


def counts(store: MemoryStore) -> dict[str, int]:
    """Row counts per table, including the FTS5 and vec0 virtual tables."""
    result = {table: scalar(store, f"SELECT count(*) FROM {table}") for table in TABLES}
    result["memories_fts"] = scalar(store, "SELECT count(*) FROM memories_fts")
    result["vector_codes"] = (scalar(store, "SELECT count(*) FROM vector_codes")
                                if has_table(store, "vector_codes") else 0)
    return result


def assert_rejected(store: MemoryStore, call: Callable[[], Any], error: type[LocalMemError],
                    message: str) -> LocalMemError:
    """``call()`` raises ``error`` whose message contains ``message``, and changes nothing."""
    before = snapshot(store)
    with pytest.raises(error) as excinfo:
        call()
    assert message in excinfo.value.message, excinfo.value.message
    assert snapshot(store) == before
    return excinfo.value


def pk_of(store: MemoryStore, memory_id: str) -> int:
    return scalar(store, "SELECT pk FROM memories WHERE id = ?", (memory_id,))


def fts_ids(store: MemoryStore, match: str) -> set[str]:
    """Ids of the memories the FTS5 index finds for ``match``."""
    return {
        row[0] for row in store.conn.execute(
            "SELECT m.id FROM memories AS m WHERE m.pk IN "
            "(SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)", (match,))
    }


def embedding_blob(store: MemoryStore, memory_id: str) -> bytes | None:
    row = store.conn.execute(
        "SELECT e.embedding FROM memory_embeddings AS e JOIN memories AS m ON m.pk = e.pk "
        "WHERE m.id = ?", (memory_id,)).fetchone()
    return row[0] if row else None


def vector_blob(store: MemoryStore, memory_id: str) -> bytes | None:
    """The memory's row in the code index."""
    row = store.conn.execute(
        "SELECT codes FROM vector_codes WHERE pk = ?", (pk_of(store, memory_id),)).fetchone()
    return row[0] if row else None


def codes_of(store: MemoryStore, embedding: bytes) -> bytes:
    """The code the vector index should hold for an embedding under the store's calibration,
    computed in numpy (the index computes it in SQL with sqlite-vec)."""
    import numpy as np

    from localmem.storage.code_calibration import Thresholds, encode

    low, mid, high = store.conn.execute("SELECT low, mid, high FROM vector_calibration").fetchone()
    return encode(np.frombuffer(embedding, np.float32), Thresholds.from_blobs(low, mid, high))[0].tobytes()


def float32(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()


def unit_vector(dimensions: int = 384, index: int = 0) -> list[float]:
    vector = [0.0] * dimensions
    vector[index] = 1.0
    return vector


def tag_rows(store: MemoryStore, memory_id: str) -> tuple[list[str], list[str]]:
    """(memory_tags, memory_tag_prefixes) of one memory, sorted."""
    pk = pk_of(store, memory_id)
    tags = sorted(r[0] for r in store.conn.execute("SELECT tag FROM memory_tags WHERE pk = ?", (pk,)))
    prefixes = sorted(r[0] for r in store.conn.execute(
        "SELECT prefix FROM memory_tag_prefixes WHERE pk = ?", (pk,)))
    return tags, prefixes


def assert_consistent(store: MemoryStore) -> None:
    """memories ↔ FTS ↔ embeddings ↔ vectors ↔ tags ↔ edges all agree."""
    pks = {r[0] for r in store.conn.execute("SELECT pk FROM memories")}
    assert {r[0] for r in store.conn.execute("SELECT rowid FROM memories_fts")} == pks
    embedded = {r[0] for r in store.conn.execute("SELECT pk FROM memory_embeddings")}
    assert embedded <= pks
    if has_table(store, "vector_codes"):
        assert {r[0] for r in store.conn.execute("SELECT pk FROM vector_codes")} == embedded
    for pk, tags_json in store.conn.execute("SELECT pk, tags FROM memories"):
        tags = json.loads(tags_json)
        assert sorted(r[0] for r in store.conn.execute(
            "SELECT tag FROM memory_tags WHERE pk = ?", (pk,))) == sorted({t.lower() for t in tags})
        assert sorted(r[0] for r in store.conn.execute(
            "SELECT prefix FROM memory_tag_prefixes WHERE pk = ?", (pk,))) == sorted(
            compute_tag_prefixes(tags))
    assert {r[0] for r in store.conn.execute("SELECT pk FROM memory_tags")} <= pks
    assert {r[0] for r in store.conn.execute("SELECT pk FROM memory_tag_prefixes")} <= pks
    for src, dst in store.conn.execute("SELECT src, dst FROM edges"):
        assert src in pks and dst in pks
    health = store.health()
    assert health["indexes_agree"] is True
    assert health["status"] == "healthy"
