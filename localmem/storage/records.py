"""Memory rows: from SQL rows to the public record, and the write-side row."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Iterable

import apsw

from ..errors import NotFoundError
from ..tags import compute_tag_prefixes
from .statements import Statements
from .threads import thread_key


# The stored JSON text of tags and metadata (default separators), encoders built once.
_STORED_JSON = json.JSONEncoder(ensure_ascii=False)
_STORED_METADATA = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


@dataclass
class MemoryRow:
    """Every stored column of a memory, validated and ready to bind."""

    id: str
    content: str
    summary: str | None
    type: str
    confidence: float
    importance: float
    tags: list[str]
    timestamp: str
    updated_at: str
    last_accessed: str
    t_valid: str | None
    t_invalid: str | None
    archived: bool
    metadata: dict[str, Any]
    context: str
    relevance_score: float | None

    @property
    def thread(self) -> str | None:
        return thread_key(self.context, self.metadata, self.tags)

    def bindings(self) -> dict[str, Any]:
        values = dict(self.__dict__)  # shallow: asdict() would deep-copy tags and metadata
        values["thread"] = thread_key(self.context, self.metadata, self.tags)
        values["tags"] = _STORED_JSON.encode(self.tags)
        values["metadata"] = _STORED_METADATA.encode(self.metadata)
        values["archived"] = int(self.archived)
        return values

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "MemoryRow":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in record.items() if k in names})


RECORD_FIELDS = (
    "id", "content", "summary", "type", "confidence", "importance", "tags",
    "tag_prefixes", "timestamp", "updated_at", "last_accessed", "t_valid",
    "t_invalid", "archived", "metadata", "context", "relevance_score",
)


def rows_as_dicts(cursor: apsw.Cursor) -> Iterable[dict[str, Any]]:
    """Yield each row of an executed cursor as a column-name dict."""
    names: list[str] | None = None
    for row in cursor:
        if names is None:
            names = [d[0] for d in cursor.getdescription()]
        yield dict(zip(names, row))


def record_by_id(conn: apsw.Connection, sql: Statements, memory_id: str) -> tuple[int, dict[str, Any]]:
    """The integer key and public record of the memory with this (valid) id; ``NotFoundError`` if none."""
    rows = list(rows_as_dicts(conn.execute(sql["memory_by_id"], {"id": memory_id})))
    if not rows:
        raise NotFoundError("Memory not found")
    return rows[0]["pk"], to_record(rows[0])


@functools.lru_cache(maxsize=4096)
def _parsed_tags(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    # Many memories share one tag list, and recall hydrates ~150 records per
    # query: parse each list and derive its prefixes once. None: not a list of
    # strings (a damaged row), handled uncached.
    tags = json.loads(text)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return None
    return tuple(tags), tuple(compute_tag_prefixes(tags))


_SCALARS = (str, int, float, bool, type(None))


@functools.lru_cache(maxsize=8192)
def _parsed_flat_metadata(text: str) -> dict[str, Any] | None:
    # Recall hydrates ~150 records per query, and the same memories come back
    # recall after recall: parse each metadata text once. Only a flat object of
    # scalars is kept (each record gets its own shallow copy, so nothing a caller
    # changes reaches the cache); None: parse it each time.
    value = json.loads(text)
    if isinstance(value, dict) and all(isinstance(v, _SCALARS) for v in value.values()):
        return value
    return None


def _metadata(text: Any) -> Any:
    if not text:
        return {}
    if isinstance(text, str):
        flat = _parsed_flat_metadata(text)
        if flat is not None:
            return dict(flat)
    return json.loads(text)


def to_record(row: dict[str, Any]) -> dict[str, Any]:
    """The public memory record from a ``memories`` row (extra columns ignored)."""
    text = row.get("tags")
    parsed = _parsed_tags(text) if text and isinstance(text, str) else None
    if parsed is not None:
        tags, prefixes = list(parsed[0]), list(parsed[1])
    else:
        tags = json.loads(text) if text else []
        prefixes = compute_tag_prefixes(tags)
    return {
        "id": row["id"],
        "content": row["content"],
        "summary": row["summary"],
        "type": row["type"],
        "confidence": row["confidence"],
        "importance": row["importance"],
        "tags": tags,
        "tag_prefixes": prefixes,
        "timestamp": row["timestamp"],
        "updated_at": row["updated_at"],
        "last_accessed": row["last_accessed"],
        "t_valid": row["t_valid"],
        "t_invalid": row["t_invalid"],
        "archived": bool(row["archived"]),
        "metadata": _metadata(row.get("metadata")),
        "context": row["context"],
        "relevance_score": row["relevance_score"],
    }
