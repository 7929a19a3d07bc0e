"""JSONL export and import: a lossless dump of memories, embeddings and edges.

Export writes one line per memory, in insertion order::

    {"kind": "memory", ...the memory record..., "embedding": [floats] or null}

then one line per edge::

    {"kind": "edge", "memory1_id", "memory2_id", "relation_type", "strength",
     "updated_at", "properties": {...}}

Import reads such lines back. Memories go through ``MemoryStore.store_many``
(validated like any stored memory) in chunks, one transaction per chunk;
edges are written afterwards with SQL, keeping their own ``updated_at`` and
properties, system relation types included. ``export -> import -> export``
gives identical lines.

An exported ``"embedding": null`` means the memory had no embedding and is
imported without one (unless ``embed_missing``); a line with no
``"embedding"`` key at all (hand-written data) is embedded with the store's
embedder.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ..storage.database import read_transaction, transaction
from ..errors import ValidationError
from ..progress import ProgressBar
from ..storage.records import rows_as_dicts, to_record
from ..validation import (
    encode_json,
    validate_embedding,
    validate_metadata,
    validate_timestamp,
    validate_unit_interval,
    validate_uuid,
)

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_CHUNK_SIZE = 1000
EDGE_FIELDS = frozenset({"memory1_id", "memory2_id", "relation_type", "strength", "updated_at", "properties"})
DERIVED_FIELDS = frozenset({"tag_prefixes"})  # recomputed on import
_RELATION_TYPE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


class ImportLineError(ValidationError):
    """A bad line in an import file; ``line`` is its 1-based number."""

    def __init__(self, line: int, message: str, *, last_line: int | None = None) -> None:
        where = f"line {line}" if last_line is None or last_line == line else f"lines {line}-{last_line}"
        super().__init__(f"{where}: {message}")
        self.line = line


@dataclass
class ImportResult:
    memories: int = 0
    edges: int = 0
    skipped: int = 0
    not_embedded: int = 0  # memories that wanted an embedding but the embedder was unavailable

    def as_dict(self) -> dict[str, int]:
        return {"memories": self.memories, "edges": self.edges, "skipped": self.skipped,
                "not_embedded": self.not_embedded}


# Characters that str.splitlines() (and JavaScript) treat as line breaks but
# JSON leaves unescaped; escaped so every record stays on one physical line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dump_line(value: dict[str, Any]) -> str:
    """One JSONL line: compact UTF-8, with every line-breaking character escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_LINE_BREAKS)


def decode_embedding(blob: bytes | None) -> list[float] | None:
    """The float32 blob of ``memory_embeddings`` as exact Python floats."""
    if blob is None:
        return None
    return array("f", bytes(blob)).tolist()


# -- export ---------------------------------------------------------------


def iter_export(store: MemoryStore) -> Iterator[dict[str, Any]]:
    """Every memory line, then every edge line, as dicts (read in one snapshot)."""
    with read_transaction(store.conn):  # one snapshot: memories and edges from the same moment
        for row in rows_as_dicts(store.conn.execute(store.sql["export_memories"])):
            record = to_record(row)
            yield {"kind": "memory", **record, "embedding": decode_embedding(row["embedding"])}
        for row in rows_as_dicts(store.conn.execute(store.sql["export_edges"])):
            yield {
                "kind": "edge",
                "memory1_id": row["memory1_id"],
                "memory2_id": row["memory2_id"],
                "relation_type": row["relation_type"],
                "strength": row["strength"],
                "updated_at": row["updated_at"],
                "properties": json.loads(row["properties"]) if row["properties"] else {},
            }


def export_jsonl(store: MemoryStore, out: TextIO) -> tuple[int, int]:
    """Write the whole store as JSONL; returns (memories, edges) written."""
    memories = edges = 0
    with store._lock:  # the store serializes users of its one connection
        for item in iter_export(store):
            out.write(dump_line(item) + "\n")
            if item["kind"] == "memory":
                memories += 1
            else:
                edges += 1
    return memories, edges


# -- import ---------------------------------------------------------------


@contextmanager
def _embedding_disabled(store: MemoryStore) -> Iterator[None]:
    """Let ``store_many`` keep memories without an embedding as they are.

    The importer decides itself which memories get embedded (and embeds them
    beforehand); ``store_many`` would otherwise embed every memory that
    arrives without a vector, which breaks the lossless round trip.
    """
    with store._lock:  # no other call may run with the embedder switched off
        saved = store.embedder
        store.embedder = None
        try:
            yield
        finally:
            store.embedder = saved


@dataclass
class _PendingMemory:
    line: int
    item: dict[str, Any]
    wants_embedding: bool


class Importer:
    """Streams JSONL lines into a store; see ``import_jsonl``."""

    def __init__(self, store: MemoryStore, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 progress: ProgressBar | None = None, embed_missing: bool = False,
                 reembed: bool = False, skip_existing: bool = False) -> None:
        if chunk_size < 1:
            raise ValidationError("chunk size must be at least 1")
        self.store = store
        self.chunk_size = chunk_size
        self.progress = progress
        self.embed_missing = embed_missing
        self.reembed = reembed
        self.skip_existing = skip_existing
        self.result = ImportResult()
        self._pending: list[_PendingMemory] = []
        self._edges: list[tuple[int, dict[str, Any]]] = []

    # parsing ------------------------------------------------------------

    def feed(self, lineno: int, text: str) -> None:
        text = text.strip()
        if not text:
            return
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ImportLineError(lineno, f"invalid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ImportLineError(lineno, "each line must be a JSON object")
        kind = value.pop("kind", "memory")
        if kind == "memory":
            self._pending.append(self._memory(lineno, value))
            if len(self._pending) >= self.chunk_size:
                self.flush_memories()
        elif kind == "edge":
            self._edges.append((lineno, self._edge(lineno, value)))
        else:
            raise ImportLineError(lineno, f"unknown kind {kind!r} (expected 'memory' or 'edge')")

    def _memory(self, lineno: int, value: dict[str, Any]) -> _PendingMemory:
        item = {k: v for k, v in value.items() if k not in DERIVED_FIELDS}
        if self.reembed:
            item.pop("embedding", None)
            wants = True
        elif "embedding" not in item:
            wants = True  # new data: embed like any stored memory
        elif item["embedding"] is None:
            wants = self.embed_missing  # exported without an embedding: keep it so
            del item["embedding"]
        else:
            wants = False
        return _PendingMemory(lineno, item, wants)

    def _edge(self, lineno: int, value: dict[str, Any]) -> dict[str, Any]:
        unknown = set(value) - EDGE_FIELDS
        if unknown:
            raise ImportLineError(lineno, f"unknown edge field(s): {', '.join(sorted(unknown))}")
        try:
            if value.get("memory1_id") is None or value.get("memory2_id") is None:
                raise ValidationError("'memory1_id' and 'memory2_id' are required")
            first = validate_uuid(value["memory1_id"], "memory1_id")
            second = validate_uuid(value["memory2_id"], "memory2_id")
            relation = value.get("relation_type")
            if not isinstance(relation, str) or not _RELATION_TYPE.fullmatch(relation.strip().upper()):
                raise ValidationError("'relation_type' must be a relation type name such as RELATES_TO")
            strength = validate_unit_interval(value.get("strength"), "strength", 0.5)
            updated_at = (validate_timestamp(value.get("updated_at"), "updated_at")
                          or validate_timestamp(self.store.now(), "updated_at"))
            properties = validate_metadata(value.get("properties"))
        except ValidationError as exc:
            raise ImportLineError(lineno, exc.message.replace("'metadata'", "'properties'")) from None
        return {"memory1_id": first, "memory2_id": second, "relation_type": relation.strip().upper(),
                "strength": strength, "updated_at": updated_at, "properties": encode_json(properties)}

    # writing ------------------------------------------------------------

    def flush_memories(self) -> None:
        chunk, self._pending = self._pending, []
        if not chunk:
            return
        store = self.store
        now = store.now()
        rows = []
        for pending in chunk:  # validate first, so an error names its line
            try:
                rows.append(store._build_row(pending.item, now=now))
                if pending.item.get("embedding") is not None:
                    if not store.has_vector_index:
                        raise ValidationError(
                            "this database has no vector index (embedder 'none'); "
                            "open it with an embedder of the same dimension, or import with --reembed")
                    validate_embedding(pending.item["embedding"], store.dimensions)
            except ValidationError as exc:
                raise ImportLineError(pending.line, exc.message) from None
        lines_by_id: dict[str, int] = {}
        for pending, row in zip(chunk, rows):
            if row.id in lines_by_id:
                raise ImportLineError(pending.line, f"duplicate id {row.id} (also on line {lines_by_id[row.id]})")
            lines_by_id[row.id] = pending.line
        with store._lock:
            existing = {r[0] for r in store.conn.execute(
                store.sql["memory_ids_existing"], {"ids": json.dumps(list(lines_by_id))})}
        if existing and not self.skip_existing:
            first = min(existing, key=lines_by_id.__getitem__)
            raise ImportLineError(lines_by_id[first], f"a memory with id {first} already exists "
                                                      "(use --skip-existing to leave it as it is)")
        keep = [(p, r) for p, r in zip(chunk, rows) if r.id not in existing]
        self.result.skipped += len(chunk) - len(keep)
        to_embed = [(p, r) for p, r in keep if p.wants_embedding]
        if to_embed:
            vectors = store.embed_texts([r.content for _, r in to_embed])
            if vectors is None:
                self.result.not_embedded += len(to_embed)
            else:
                for (pending, _), blob in zip(to_embed, vectors):
                    pending.item["embedding"] = decode_embedding(blob)
        items = [p.item for p, _ in keep]
        try:
            with _embedding_disabled(store):
                store.store_many(items)
        except ValidationError as exc:
            raise ImportLineError(chunk[0].line, exc.message, last_line=chunk[-1].line) from None
        self.result.memories += len(items)
        if self.progress is not None:
            self.progress.advance(len(chunk))

    def write_edges(self) -> None:
        store = self.store
        edges, self._edges = self._edges, []
        for start in range(0, len(edges), self.chunk_size):
            chunk = edges[start:start + self.chunk_size]
            with store._lock, transaction(store.conn):
                for lineno, binding in chunk:
                    store.conn.execute(store.sql["import_edge"], binding)
                    if store.conn.changes() == 0:
                        raise ImportLineError(
                            lineno, f"edge endpoint not found: {binding['memory1_id']} or "
                                    f"{binding['memory2_id']} is not a memory in this database")
            self.result.edges += len(chunk)
            if self.progress is not None:
                self.progress.advance(len(chunk))

    def finish(self) -> ImportResult:
        self.flush_memories()
        self.write_edges()
        return self.result


def import_jsonl(store: MemoryStore, lines: Iterable[str], *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 progress: ProgressBar | None = None, embed_missing: bool = False,
                 reembed: bool = False, skip_existing: bool = False) -> ImportResult:
    """Import JSONL lines (as written by ``export_jsonl``) into ``store``.

    Memories are written in chunks of ``chunk_size``, one transaction each;
    a bad line raises ``ImportLineError`` (a ``ValidationError``) naming it,
    and nothing of its chunk is written (earlier chunks stay). Edges are
    written after all memories. ``embed_missing`` also embeds memories
    exported without an embedding; ``reembed`` ignores the file's vectors and
    embeds every memory with this store's embedder; ``skip_existing`` leaves
    memories whose id already exists untouched instead of failing.
    """
    importer = Importer(store, chunk_size=chunk_size, progress=progress, embed_missing=embed_missing,
                        reembed=reembed, skip_existing=skip_existing)
    for lineno, text in enumerate(lines, 1):
        importer.feed(lineno, text)
    return importer.finish()
