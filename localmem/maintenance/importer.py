"""JSONL import: the other half of ``export.py``'s dump of memories, embeddings and edges.

Export (``export.py``) writes a header line first (format version, the embedder that made
the vectors, the counts: ``export_header``), then one line per memory, in
insertion order::

    {"kind": "memory", ...the memory record..., "embedding": [floats] or null,
     "token_codes": {"tokens": n, "codes": base64} or null,   (version 2: export_tokens.py)
     "sync": {"stamp", "digest", "seen"}}   (optional: import_stamps.py)

then one line per edge::

    {"kind": "edge", "memory1_id", "memory2_id", "relation_type", "strength",
     "updated_at", "properties": {...}}

``export -> import -> export`` gives identical lines. The import policy:

* A header, when the file has one, must be the first line; vectors made by
  another embedder than the database's are refused unless ``reembed``, and a
  file with fewer or more lines than its header announces is refused as
  truncated or altered. Files without a header import as before.

* Every line is validated as the API validates it: a memory line as
  ``MemoryStore.store`` would store it, an edge line as
  ``MemoryStore.associate`` would write it (no self-edges, strength in
  [0, 1], property names ``associate`` knows), except that it keeps its own
  ``updated_at`` and may also carry the system relation types recall reads
  and export writes (SIMILAR_TO, PRECEDED_BY, DISCOVERED). A file may hold
  the same memory id or edge (pair and type) only once.
* All or nothing (the default): the whole file is checked first, edges
  against the memories of the file and of the database, and then written in
  one transaction; on any error nothing is written, so the same import can
  simply be run again. Lines already checked wait in a temporary file, so
  memory use grows with the number of ids, not with the size of the file.
  ``chunked`` instead commits every ``chunk_size`` memories on their own
  (edges after all memories): an error keeps the earlier chunks, and the
  import resumes with ``skip_existing``.
* Existing data is not changed unless asked: a memory id or edge that already
  exists is an error naming its line (before anything is written);
  ``skip_existing`` leaves it as it is and counts it as skipped; ``update``
  changes it to the fields its line gives, as ``MemoryStore.update`` would
  (a line identical to what is stored counts as unchanged; a line whose
  ``updated_at`` is older than the stored one's sets the memory back to it,
  counted and named in ``older``). Memory lines without an ``id`` are new
  memories every time.

An exported ``"embedding": null`` means the memory had no embedding and is
imported without one (unless ``embed_missing``); a line with no
``"embedding"`` key at all (hand-written data) is embedded with the store's
embedder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..storage import writes
from ..storage.edges import EDGE_PROPERTIES
from ..storage.memory_fields import build_row, merged_update
from ..storage.database import transaction
from ..errors import ValidationError
from ..progress import ProgressBar, in_steps
from ..storage.records import MemoryRow, rows_as_dicts, to_record
from ..relations import RELATION_TYPES
from ..replication.conflict_copy import relink_conflict_copies
from ..timeparse import format_timestamp, parse_timestamp
from .export_header import check_header
from .export_tokens import CodesPolicy, read_codes_field
from .import_result import ImportLineError, ImportResult
from .import_spool import Spool
from .import_stamps import FIELD, FileStamp, held_versions, horizon, read_sync_field, store_identity
from .import_stamps import take_stamps, why_not
from ..validation import (
    JSONTextError,
    decode_json,
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
# The 11 authorable types plus the system ones of the registry: export writes
# whatever edges the file has, and they must come back as they were.
IMPORT_RELATION_TYPES: tuple[str, ...] = tuple(sorted(RELATION_TYPES))
EXISTING_HINT = "--skip-existing leaves it as it is, --update changes it"


# -- import: validated lines ------------------------------------------------


@dataclass
class _Memory:
    line: int
    item: dict[str, Any]  # the line's own fields, without "embedding" (what --update applies)
    row: MemoryRow  # the line as store() would write it, defaults filled in
    vector: bytes | None  # the line's vector, or the one embedded for it
    given: bool  # the vector came from the line
    wants_embedding: bool  # stored new without a vector, it is embedded
    embedded: bool = False  # the embedder has been asked for ``vector`` already
    codes: tuple[int, bytes] | None = None  # the file's token codes (kept), or those made when this store embedded it
    space: tuple[str | None, str | None] | None = None  # the file's embedder when it was (Backend.vector_space)
    stamp: FileStamp | None = None  # the line's sync stamp (import_stamps.py)


@dataclass
class _Edge:
    line: int
    first: str
    second: str
    relation: str
    strength: float | None  # None: not in the line (0.5 for a new edge)
    properties: dict[str, Any] | None  # None: not in the line ({} for a new edge)
    updated_at: str | None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.first, self.relation, self.second)


@dataclass
class _Action:
    """What writing one memory line does to the store as it is now."""

    memory: _Memory
    kind: str  # "create", "update", "unchanged" or "skip"
    pk: int | None = None
    old: MemoryRow | None = None
    new: MemoryRow | None = None
    current_vector: bytes | None = None
    needs_vector: bool = False  # the line's content must be embedded for it


class Importer:
    """Streams JSONL lines into a store; see ``import_jsonl`` and the module docstring.

    ``feed`` each line, then ``finish``. Call ``close`` (or use ``with``)
    when stopping early.
    """

    def __init__(self, store: MemoryStore, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 progress: ProgressBar | None = None, embed_missing: bool = False,
                 reembed: bool = False, skip_existing: bool = False, update: bool = False,
                 chunked: bool = False) -> None:
        if chunk_size < 1:
            raise ValidationError("chunk size must be at least 1")
        if skip_existing and update:
            raise ValidationError("choose one of skip_existing (--skip-existing) and update (--update)")
        self.store = store
        self.chunk_size = chunk_size
        self.progress = progress
        self.embed_missing = embed_missing
        self.reembed = reembed
        self.on_existing = "skip" if skip_existing else "update" if update else "error"
        self.chunked = chunked
        self.result = ImportResult(chunked=chunked)
        self.lines = 0  # non-blank lines fed
        self.announced: dict[str, int] | None = None  # the counts the header gives
        self.codes: CodesPolicy | None = None  # whether the file's token codes are kept (its header)
        self._now = store.now()
        self._ids: dict[str, int] = {}  # every memory id of the file -> its line
        self._edge_lines: dict[tuple[str, str, str], int] = {}
        self._pending: list[_Memory] = []
        self._pending_edges: list[_Edge] = []
        self._brought_back: list[str] = []  # ids stored where they were absent: their conflict copies are relinked
        self._memories = Spool(store.path)  # checked memory chunks (all-or-nothing mode)
        self._edges = Spool(store.path)  # checked edge chunks, written after every memory

    def __enter__(self) -> Importer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._memories.close()
        self._edges.close()

    # parsing ------------------------------------------------------------

    def feed(self, lineno: int, text: str) -> None:
        text = text.strip()
        if not text:
            return
        try:
            value = decode_json(text, f"line {lineno}")
        except JSONTextError as exc:  # also a line nested too deep to parse safely
            raise ImportLineError(lineno, f"invalid JSON: {exc.reason}") from None
        if not isinstance(value, dict):
            raise ImportLineError(lineno, "each line must be a JSON object")
        kind = value.pop("kind", "memory")
        first = self.lines == 0
        self.lines += 1  # for the progress bar of the write pass
        if kind == "header":
            if not first:
                raise ImportLineError(lineno, "a header may only be the first line")
            try:
                self.announced = check_header(value, self.store, reembed=self.reembed)
                self.codes = CodesPolicy(self.store, value, reembed=self.reembed)
                self.result.token_codes_kept = self.codes.why_not or "the file carries none for them"
            except ValidationError as exc:
                raise ImportLineError(lineno, exc.message) from None
        elif kind == "memory":
            self._pending.append(self._memory(lineno, value))
            if len(self._pending) >= self.chunk_size:
                self.flush_memories()
        elif kind == "edge":
            self._pending_edges.append(self._edge(lineno, value))
            if len(self._pending_edges) >= self.chunk_size:
                self._edges.append(self._pending_edges)
                self._pending_edges = []
        else:
            raise ImportLineError(lineno, f"unknown kind {kind!r} (expected 'header', 'memory' or 'edge')")

    def _memory(self, lineno: int, value: dict[str, Any]) -> _Memory:
        item = {k: v for k, v in value.items() if k not in DERIVED_FIELDS}
        missing = "embedding" not in item
        vector_value = item.pop("embedding", None)
        codes_value = item.pop("token_codes", None)
        stamp_value = item.pop(FIELD, None)
        if self.reembed:
            vector_value, wants = None, True
        elif missing:
            wants = True  # new data: embed like any stored memory
        else:
            wants = vector_value is None and self.embed_missing  # exported without one: keep it so
        store = self.store
        try:
            row = build_row(item, now=self._now)  # exactly store()'s validation
            vector = None
            if vector_value is not None:
                if not store.has_vector_index:
                    raise ValidationError(
                        "this database has no vector index (embedder 'none'); "
                        "open it with an embedder of the same dimension, or import with --reembed")
                vector = validate_embedding(vector_value, store.dimensions)
            keeps_codes = not wants and self.codes is not None and self.codes.keeps
            file_codes = read_codes_field(codes_value, store.dimensions) if keeps_codes else None
            stamp = read_sync_field(stamp_value)
        except ValidationError as exc:
            raise ImportLineError(lineno, exc.message) from None
        if row.id in self._ids:
            raise ImportLineError(lineno, f"duplicate id {row.id} (also on line {self._ids[row.id]})")
        self._ids[row.id] = lineno
        # the file's codes (measured from this database's centre) unless this store embeds it
        return _Memory(lineno, item, row, vector, vector is not None, wants, codes=file_codes, stamp=stamp)

    def _edge(self, lineno: int, value: dict[str, Any]) -> _Edge:
        unknown = set(value) - EDGE_FIELDS
        if unknown:
            raise ImportLineError(lineno, f"unknown edge field(s): {', '.join(sorted(unknown))}")
        try:  # associate()'s rules, with the line's field names
            if value.get("memory1_id") is None or value.get("memory2_id") is None:
                raise ValidationError("'memory1_id' and 'memory2_id' are required")
            first = validate_uuid(value["memory1_id"], "memory1_id")
            second = validate_uuid(value["memory2_id"], "memory2_id")
            raw = value.get("relation_type")
            relation = (raw or "RELATES_TO").upper() if isinstance(raw, str) else None
            if relation not in IMPORT_RELATION_TYPES:
                raise ValidationError(f"'relation_type' must be one of {list(IMPORT_RELATION_TYPES)}")
            if first == second:
                raise ValidationError("cannot associate a memory with itself (memory1_id equals memory2_id)")
            strength = value.get("strength")
            if strength is not None:
                strength = validate_unit_interval(strength, "strength", None)
            properties = value.get("properties")
            if properties is not None:
                properties = validate_metadata(properties)
                names = set(properties) - EDGE_PROPERTIES
                if names:
                    raise ValidationError(f"Unknown relation propert{'y' if len(names) == 1 else 'ies'}: "
                                          f"{', '.join(sorted(names))}")
            updated_at = validate_timestamp(value.get("updated_at"), "updated_at")
        except ValidationError as exc:
            raise ImportLineError(lineno, exc.message.replace("'metadata'", "'properties'")) from None
        parsed = _Edge(lineno, first, second, relation, strength, properties, updated_at)
        if parsed.key in self._edge_lines:
            raise ImportLineError(lineno, f"duplicate edge {first} -[{relation}]-> {second} "
                                          f"(also on line {self._edge_lines[parsed.key]})")
        self._edge_lines[parsed.key] = lineno
        return parsed

    # memories -----------------------------------------------------------

    def flush_memories(self) -> None:
        """Check the pending memory lines against the store and embed them.

        All or nothing: the chunk is parked until ``finish``. Chunked: it is
        written now, in its own transaction.
        """
        chunk, self._pending = self._pending, []
        if not chunk:
            return
        store = self.store
        with store.lock:
            actions = self._plan_memories(chunk)  # raises before any write
        shown = self.progress.done if self.progress is not None else 0
        # Outside the lock: embedding can take a while; in steps that move the bar.
        self._ensure_vectors(actions, self.progress)
        if self.chunked:
            with store.lock, transaction(store.conn):
                self._write_memories(chunk)
        else:
            self._memories.append(chunk)
        if self.progress is not None:  # the rest of the chunk (embedding advanced it in part)
            self._advance(shown + len(chunk) - self.progress.done)

    def _plan_memories(self, chunk: list[_Memory]) -> list[_Action]:
        store, ids = self.store, {"ids": json.dumps([m.row.id for m in chunk])}
        current = {row["id"]: row for row in rows_as_dicts(store.conn.execute(store.sql["import_existing_memories"],
                                                                              ids))}
        forgotten = {i: when[:10] for i, when in store.conn.execute(store.sql["import_forgotten_memories"], ids)}
        for m in (m for m in chunk if m.row.id in forgotten and m.row.id not in current):
            raise ImportLineError(m.line, f"memory {m.row.id} was forgotten ('localmem forget', {forgotten[m.row.id]}"
                                  "); to import the rest, remove its line and its edges' lines (and lower the header's "
                                  "counts), or remove its id to store the text as a new memory")
        return [self._plan_memory(m, current.get(m.row.id)) for m in chunk]

    def _plan_memory(self, memory: _Memory, current: dict[str, Any] | None) -> _Action:
        if current is None:
            return _Action(memory, "create", needs_vector=memory.wants_embedding)
        if self.on_existing == "error":
            raise ImportLineError(memory.line, f"a memory with id {memory.row.id} already exists ({EXISTING_HINT})")
        if self.on_existing == "skip":
            return _Action(memory, "skip")
        record = to_record(current)
        old = MemoryRow.from_record(record)
        # update()'s merge of the line's fields; updated_at stays until something changes
        fields = {**memory.item, "updated_at": memory.item.get("updated_at", old.updated_at)}
        new, _ = merged_update(record, fields, now=self.store.now())
        action = _Action(memory, "update", current["pk"], old, new, current["embedding"])
        action.needs_vector = not memory.given and (self.reembed or new.content != old.content)
        return action

    def _ensure_vectors(self, actions: list[_Action], progress: ProgressBar | None = None) -> None:
        """Embed the lines whose vector is needed and not yet asked for (advancing ``progress``)."""
        todo = [a.memory for a in actions if a.needs_vector and not a.memory.embedded]
        if not todo:
            return
        space = self.store.backend.vector_space()
        embedded = in_steps(self.store.embed_for_storage, [m.row.content for m in todo], progress)
        for index, memory in enumerate(todo):
            memory.vector, memory.codes = embedded[index] if embedded is not None else (None, None)
            memory.embedded, memory.space = True, space

    def _write_memories(self, chunk: list[_Memory]) -> None:
        """Write a checked chunk inside the caller's transaction, re-planned on the store as it is now."""
        store = self.store
        if self.codes is not None and self.codes.keeps:
            self.codes.adopt_centre(self._now)  # the file's codes are measured from it
        actions = self._plan_memories(chunk)  # another writer may have changed the store meanwhile
        for memory in chunk:  # embedded before a reembed swapped the file's embedder: embed again
            if memory.embedded and not memory.given and store.backend.vector_space_moved(memory.space):
                memory.embedded = False
        self._ensure_vectors(actions)
        held = held_versions(store, [m.row.id for m in chunk if m.stamp is not None])
        rows: list[MemoryRow] = []
        vectors: list[bytes | None] = []
        codes: list[tuple[int, bytes] | None] = []
        coding = store.backend.token_evidence
        for action in actions:
            memory = action.memory
            vector = memory.vector if (memory.given or action.needs_vector) else None
            # codes this store made with the vector it embedded, or the file's for a line it did not embed
            token_codes = memory.codes if (action.needs_vector or not memory.embedded) else None
            if action.kind == "create":
                rows.append(memory.row)
                vectors.append(vector)
                codes.append(token_codes)
                self.result.without_token_codes += coding and vector is not None and token_codes is None
                if action.needs_vector and vector is None:
                    self.result.not_embedded += 1
            elif action.kind == "update":
                assert action.old is not None and action.new is not None and action.pk is not None
                content_changed = action.new.content != action.old.content
                if vector is None and not content_changed:
                    vector_changed = False  # --reembed without an embedder: keep the vector there is
                else:  # a changed content drops a stale vector, as update() does
                    vector_changed = (memory.given or action.needs_vector) and vector != action.current_vector
                if action.new == action.old and not vector_changed:
                    action.kind = "unchanged"
                    continue
                if "updated_at" not in memory.item:
                    action.new.updated_at = format_timestamp(self._now)
                if vector_changed and vector is None:
                    self.result.not_embedded += 1
                self.result.without_token_codes += (coding and vector_changed and vector is not None
                                                    and token_codes is None)
                writes.update_memory(store.conn, store.sql, action.pk, action.old, action.new,
                                     vector, vector_changed, store.has_vector_index, token_codes)
                if parse_timestamp(action.new.updated_at) < parse_timestamp(action.old.updated_at):
                    self.result.older.append(memory.row.id)  # an older version over a newer one: said
        if rows:  # their ids are free: the plan, made in this transaction, found none of them stored
            writes.insert_memories(store.conn, store.sql, rows, vectors, store.has_vector_index, codes)
            self._brought_back += [row.id for row in rows]
        self._take_stamps([a for a in actions if a.kind in ("create", "update") and a.memory.stamp], held)
        for action in actions:
            self.result.memory.count(action.kind)

    def _take_stamps(self, written: list[_Action], held: dict[str, tuple[str | None, bool]]) -> None:
        """Record the lines written as the very version their stamp names where that holds (import_stamps.py)."""
        taken, counts, store_id, limit = [], self.result.stamps, store_identity(self.store), horizon(self.store)
        for action in written:
            memory, row = action.memory, action.new or action.memory.row
            assert memory.stamp is not None
            why = why_not(memory.stamp, row, held.get(row.id, (None, False)), updates=action.kind == "update",
                          store_id=store_id, horizon_ms=limit, named="id" in memory.item)
            if why is None:
                taken.append((row.id, memory.stamp))
            else:
                counts.not_taken[why] = counts.not_taken.get(why, 0) + 1
        counts.taken += len(taken)
        take_stamps(self.store, taken)

    # edges --------------------------------------------------------------

    def _plan_edges(self, chunk: list[_Edge]) -> list[tuple[str, dict[str, Any] | None]]:
        """Check a chunk of edges on the store as it is: each one's action and what to write."""
        store = self.store
        outside = sorted({i for e in chunk for i in (e.first, e.second) if i not in self._ids})
        known = {r[0] for r in store.conn.execute(store.sql["memory_ids_existing"], {"ids": json.dumps(outside)})}
        for e in chunk:
            for endpoint in (e.first, e.second):
                if endpoint not in self._ids and endpoint not in known:
                    raise ImportLineError(e.line, f"edge endpoint not found: {endpoint} is not a memory "
                                                  "in this file or in the database")
        current = {row["position"]: row for row in rows_as_dicts(store.conn.execute(
            store.sql["import_existing_edges"], {"edges": json.dumps([list(e.key) for e in chunk])}))}
        return [self._plan_edge(e, current.get(index)) for index, e in enumerate(chunk)]

    def _plan_edge(self, edge: _Edge, current: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
        binding = {"memory1_id": edge.first, "memory2_id": edge.second, "relation_type": edge.relation}
        if current is None:
            return "create", {**binding, "strength": 0.5 if edge.strength is None else edge.strength,
                              "properties": encode_json(edge.properties or {}),
                              "updated_at": edge.updated_at or format_timestamp(self._now)}
        if self.on_existing == "error":
            raise ImportLineError(edge.line, f"an edge {edge.first} -[{edge.relation}]-> {edge.second} "
                                             f"already exists ({EXISTING_HINT})")
        if self.on_existing == "skip":
            return "skip", None
        # update: the fields the line gives replace the stored ones
        strength = current["strength"] if edge.strength is None else edge.strength
        stored = json.loads(current["properties"]) if current["properties"] else {}
        properties = stored if edge.properties is None else edge.properties
        if (strength == current["strength"] and properties == stored
                and edge.updated_at in (None, current["updated_at"])):
            return "unchanged", None
        return "update", {**binding, "strength": strength, "properties": encode_json(properties),
                          "updated_at": edge.updated_at or format_timestamp(self._now)}

    def _write_edges(self, chunk: list[_Edge]) -> None:
        store = self.store
        for edge, (action, binding) in zip(chunk, self._plan_edges(chunk)):
            if binding is not None:
                store.conn.execute(store.sql["import_edge"], binding)
                if store.conn.changes() == 0:  # an endpoint was deleted since the check
                    raise ImportLineError(edge.line, "edge endpoint not found: "
                                                     f"{edge.first} or {edge.second} is no longer a memory")
            self.result.edge.count(action)

    # finishing ----------------------------------------------------------

    def _advance(self, count: int) -> None:
        if self.progress is not None:
            self.progress.advance(count)

    def _check_counts(self) -> None:
        """A file with a header holds exactly the lines it announces."""
        seen = {"memories": len(self._ids), "edges": len(self._edge_lines)}
        if self.announced is not None and seen != self.announced:
            raise ImportLineError(1, (
                f"the header announces {self.announced['memories']} memories and "
                f"{self.announced['edges']} edges, the file holds {seen['memories']} and "
                f"{seen['edges']}: it was cut short or altered"))

    def finish(self) -> ImportResult:
        """Check what is left, then write (all or nothing: everything, in one transaction)."""
        store = self.store
        self.flush_memories()
        if not self.chunked:
            self._check_counts()
        if self._pending_edges:
            self._edges.append(self._pending_edges)
            self._pending_edges = []
        if self.chunked:
            for chunk in self._edges:
                with store.lock, transaction(store.conn):
                    self._write_edges(chunk)
                self._advance(len(chunk))
            with store.lock, transaction(store.conn):  # after the file's edges, which may hold the links
                relink_conflict_copies(store, self._brought_back)
            self._check_counts()  # the chunks are written: this can only tell
            return self.result
        for chunk in self._edges:  # every edge checked before anything is written
            with store.lock:
                self._plan_edges(chunk)
            self._advance(len(chunk))
        if self.progress is not None:
            self.progress.restart("importing", self.lines)
        try:
            with store.lock, transaction(store.conn):
                for chunk in self._memories:
                    self._write_memories(chunk)
                    self._advance(len(chunk))
                for chunk in self._edges:
                    self._write_edges(chunk)
                    self._advance(len(chunk))
                relink_conflict_copies(store, self._brought_back)  # after the file's edges (see above)
        except BaseException:
            self.result = ImportResult(chunked=False)  # rolled back: nothing was imported
            raise
        return self.result


def import_jsonl(store: MemoryStore, lines: Iterable[str], *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 progress: ProgressBar | None = None, embed_missing: bool = False,
                 reembed: bool = False, skip_existing: bool = False, update: bool = False,
                 chunked: bool = False) -> ImportResult:
    """Import JSONL lines (as written by ``export_jsonl``) into ``store``.

    All or nothing unless ``chunked``; an existing memory id or edge is an
    error unless ``skip_existing`` (leave it) or ``update`` (change it). A bad
    line raises ``ImportLineError`` (a ``ValidationError``) naming it. See
    the module docstring for the whole policy. ``embed_missing`` also embeds
    memories exported without an embedding; ``reembed`` ignores the file's
    vectors and embeds every memory with this store's embedder.
    """
    with Importer(store, chunk_size=chunk_size, progress=progress, embed_missing=embed_missing,
                  reembed=reembed, skip_existing=skip_existing, update=update, chunked=chunked) as importer:
        for lineno, text in enumerate(lines, 1):
            importer.feed(lineno, text)
        return importer.finish()
