"""MemoryStore: the public Python API over one SQLite file."""

from __future__ import annotations

import functools
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .storage import edges as edge_store
from .storage import memory_fields, writes
from .storage.memory_fields import CLEARABLE_FIELDS, UPDATE_FIELDS, merged_update
from .storage.ids import abbreviate_ids, resolve_id
from .storage.listing import BY_TAG_MAX_LIMIT, by_tag_page, list_page
from .classify import replacement_type
from .config import Config
from .storage.backend import Backend
from .storage.embedded import (Embedded, PreparedWrite, embed_contents, in_current_space, prepare_rows,
                               subset)
from .storage.database import MEMORY_PATH, connect, connect_read_only, read_transaction, storage_errors, transaction
from .embedders import resolve_embedder
from .errors import NotFoundError, ValidationError
from .storage.migrations import migrate, require_current_schema
from .privacy import redact_items, redact_update
from .progress import ProgressBar
from .storage.health import health_report
from .recall.learned_rank import TreeModel
from .recall import duplicates
from .recall.pipeline import run_recall
from .recall.warm_up import load_embedder, read_learned_model, warm_up
from .recall.state import (memory_state, memory_states, state_counts, still_hidden_warning,
                           without_current_successor)
from .storage.records import MemoryRow, record_by_id
from .relations import SUPERSESSION_TYPES
from .storage.statements import Statements
from .tags import with_tags_read
from .timeparse import format_timestamp
from .validation import strip_non_finite, validate_embedding, validate_int, validate_uuid

# Where the interfaces have always imported them from (storage/ holds the rules).
STORE_FIELDS = memory_fields.STORE_FIELDS
EDGE_PROPERTIES = edge_store.EDGE_PROPERTIES
__all__ = ["BY_TAG_MAX_LIMIT", "EDGE_PROPERTIES", "STORE_FIELDS", "UPDATE_FIELDS", "MemoryStore", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a public method under the store's lock.

    One apsw connection is shared by every thread that uses the store; a
    transaction opened by one thread must not take in another thread's
    statements, so calls are serialized. Resource faults of SQLite (full
    disk, read-only file, lock timeout, I/O errors) come out as ``StorageError``.
    """
    @functools.wraps(method)
    def wrapper(self: "MemoryStore", *args: Any, **kwargs: Any) -> Any:
        with self._lock, storage_errors():
            return method(self, *args, **kwargs)
    return wrapper


def _on_backend(name: str, doc: str) -> property:
    """A store attribute that lives on its backend (readable and settable, as before)."""
    return property(lambda self: getattr(self._backend, name),
                    lambda self, value: setattr(self._backend, name, value), doc=doc)


class MemoryStore:
    """A memory store in one SQLite file (or ``":memory:"``).

    ``embedder`` is ``"auto"``, ``"hash"``, ``"none"``, a sentence-transformers
    model name or path, or any object with ``name``, ``dimensions`` and
    ``embed(texts)``. ``clock`` returns the current time (tests pin it).
    ``read_only=True`` opens an existing file for reading only (read-only
    media too); every write then raises ``StorageError``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY_PATH,
        *,
        embedder: Any = "auto",
        config: Config | None = None,
        clock: Callable[[], datetime] | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = str(path) if str(path) == MEMORY_PATH else str(Path(path).expanduser())
        self.read_only = bool(read_only)
        self._lock = threading.RLock()
        config = config if config is not None else Config.from_env()
        resolved = resolve_embedder(embedder)
        sql = Statements()
        if self.read_only:
            conn = connect_read_only(self.path)
        else:
            conn = connect(self.path, synchronous=config.synchronous)
        self._backend = Backend(conn, sql, config=config, embedder=resolved, clock=clock or utc_now)
        try:
            if self.read_only:
                require_current_schema(conn)  # a read-only store cannot migrate
            else:
                migrate(conn, sql, home=self.path)
            self._backend.settle_dimensions(self.path)
        except BaseException:
            conn.close()
            raise
        self._closed = False

    conn = _on_backend("conn", "The apsw connection (one per store, serialized by the store's lock).")
    sql = _on_backend("sql", "The SQL statements, by file name.")
    config = _on_backend("config", "Weights and limits (``localmem.Config``).")
    clock = _on_backend("clock", "Returns the current time (tests pin it).")
    embedder = _on_backend("embedder", "The embedder, or None for no vector channel.")
    dimensions = _on_backend("dimensions", "The vector length the file records, or None.")
    embedder_error = _on_backend("embedder_error", "Why the embedder could not run, if it could not.")

    @property
    def lock(self) -> threading.RLock:
        """The store's re-entrant lock: hold it to make several calls (or direct use of ``conn``) one step."""
        return self._lock

    @property
    def backend(self) -> Backend:
        """What the recall pipelines are handed: connection, statements, embedder, config, clock."""
        return self._backend

    # -- lifecycle --------------------------------------------------------

    @_serialized
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._backend.aside.close()
            self.conn.close()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        name = self.embedder.name if self.embedder else "none"
        return f"MemoryStore({self.path!r}, embedder={name!r})"

    # -- internals --------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        return self._backend.meta(key)

    def query_tokens(self, text: str) -> list[str]:
        """``text`` as the full-text index tokenizes it (porter-stemmed, lowercased)."""
        return self._backend.query_tokens(text)

    @property
    def has_vector_index(self) -> bool:
        return self._backend.has_vector_index

    def now(self) -> datetime:
        return self._backend.now()

    def embed_texts(self, texts: list[str]) -> list[bytes] | None:
        """Embed texts as float32 bytes; None when the embedder is missing or fails to load."""
        return self._backend.embed_texts(texts)

    def embed_for_storage(self, texts: list[str]) -> list[tuple[bytes | None, tuple[int, bytes] | None]] | None:
        """Per text, what storing it writes: its float32 vector and its token codes (None
        without token evidence); None when the embedder is missing or fails to load."""
        found = self._embed_contents(texts)
        return None if found is None else list(zip(found.vectors, found.token_codes))

    def _pk_and_record(self, memory_id: str) -> tuple[int, dict[str, Any]]:
        return record_by_id(self.conn, self.sql, validate_uuid(memory_id))

    def _insert_rows(self, rows: list[MemoryRow], prepared: Embedded) -> None:
        writes.check_ids_free(self.conn, self.sql, rows)
        prepared = self._in_current_space(prepared, [row.content for row in rows])
        writes.insert_memories(self.conn, self.sql, rows, prepared.vectors, self.has_vector_index,
                               prepared.token_codes)

    def _in_current_space(self, prepared: Embedded, texts: list[str]) -> Embedded:
        """``prepared`` as the file's embedder makes it now (under the store's lock; again in the write transaction)."""
        return in_current_space(self._backend, prepared, texts, self._embed_contents)

    def _embed_contents(self, texts: list[str]) -> Embedded | None:
        return embed_contents(self._backend, self._lock, texts)

    def _embed_one(self, text: str) -> tuple[bytes | None, tuple[int, bytes] | None]:
        """Vector and token codes of one text; (None, None) when the embedder cannot run (not a stale vector)."""
        found = self._embed_contents([text])
        return (None, None) if found is None else (found.vectors[0], found.token_codes[0])

    # -- writes -----------------------------------------------------------

    def store(self, content: str, *, dedup: bool = False, redact: bool = False, **fields: Any) -> str:
        """Store one memory; returns its id. Validation and defaults follow AutoMem's POST /memory.
        ``dedup=True``: the id of the current exact duplicate when there is one (store_checked).
        ``redact=True``: credentials and ``<private>`` regions go before anything is written
        (docs/privacy.md); ``metadata.redacted`` counts them by kind."""
        return self._store_one(content, dedup, redact, fields)["id"]

    def store_checked(self, content: str, *, dedup: bool = True, redact: bool = False,
                      **fields: Any) -> dict[str, Any]:
        """Store one memory unless a current exact duplicate exists in its scope (docs/dedup.md).

        Returns ``{"id", "deduped", "similar_existing": [{"id", "score"}], "similar_checked"}``;
        a deduped write returns the existing memory's id, unchanged, and ``not_applied`` names
        the given fields it does not have. ``dedup=False`` stores as ``store`` does, unchecked.
        """
        return self._store_one(content, dedup, redact, fields)

    def _store_one(self, content: str, dedup: bool, redact: bool, fields: dict[str, Any]) -> dict[str, Any]:
        # As prepare_many: the model runs before the lock is taken, so one write never holds other threads' recalls.
        items = redact_items([{**fields, "content": content}], redact)
        with storage_errors():
            rows, embedded = prepare_rows(self._backend, self._lock, items, frames=4)
            prepared = PreparedWrite(items, rows, embedded, redacted=redact)
        return self.store_many_checked(prepared, dedup=dedup)[0]

    @_serialized
    def store_many(self, items: Iterable[Mapping[str, Any]], *, batch_size: int = 256,
                   progress: bool = False, dedup: bool = False, redact: bool = False) -> list[str]:
        """Store many memories in one transaction (all or nothing); returns their ids
        (``dedup=True``: as ``store_many_checked``, the ids alone)."""
        return [r["id"] for r in self._write_many(items, batch_size, progress, dedup, redact)]

    @_serialized
    def store_many_checked(self, items: Iterable[Mapping[str, Any]], *, batch_size: int = 256,
                           progress: bool = False, dedup: bool = True, redact: bool = False) -> list[dict[str, Any]]:
        """``store_many`` with ``store_checked``'s answer per item, in order; an item repeating
        an earlier one of the batch is deduped to it. ``items`` may be ``prepare_many``'s answer."""
        return self._write_many(items, batch_size, progress, dedup, redact)

    def prepare_many(self, items: Iterable[Mapping[str, Any]], *, redact: bool = False) -> PreparedWrite:
        """Check, redact and embed items for ``store_many_checked(prepared)``, the store's lock not held while
        the model runs (other threads' recalls go on); nothing written (a reembed meanwhile is caught there)."""
        items = redact_items(memory_fields.memory_list(items), redact)
        with storage_errors():
            rows, embedded = prepare_rows(self._backend, self._lock, items, frames=3)
            return PreparedWrite(items, rows, embedded, redacted=redact)

    def _write_many(self, items: Any, batch_size: int, progress: bool, dedup: bool,
                    redact: bool) -> list[dict[str, Any]]:
        if isinstance(items, PreparedWrite):
            if redact and not items.redacted:
                raise ValidationError("redact: the items were prepared without it (prepare_many(redact=True))")
            return self._write(items.items, dedup, prepared=items)
        batch_size = validate_int(batch_size, "batch_size", default=256, minimum=1, maximum=10_000)
        items = memory_fields.memory_list(items)
        bar = ProgressBar(len(items), "embedding") if progress else None
        try:
            return self._write(items, dedup, batch_size=batch_size, progress=bar, frames=6, redact=redact)
        finally:
            if bar is not None:
                bar.close()

    def _write(self, items: list[Mapping[str, Any]], dedup: bool, *, batch_size: int = 256,
               progress: ProgressBar | None = None, frames: int = 5, redact: bool = False,
               prepared: PreparedWrite | None = None) -> list[dict[str, Any]]:
        """Store items, with dedup (docs/dedup.md) when asked: the near-duplicate kNN before the write lock,
        the exact-duplicate lookup and the insert under it, in one transaction. Redaction comes first."""
        items = items if prepared is not None else redact_items(items, redact)
        if prepared is None:
            rows, embeddings = prepare_rows(self._backend, self._lock, items, batch_size=batch_size,
                                            progress=progress, frames=frames)
        else:
            rows, embeddings = prepared.rows, prepared.embedded
        if not dedup:
            with transaction(self.conn):
                self._insert_rows(rows, embeddings)
            return [{"id": row.id, "deduped": False, "similar_existing": [], "similar_checked": False}
                    for row in rows]
        # The kNN reads the file's index: vectors made before a reembed swapped it are made again first,
        embeddings = self._in_current_space(embeddings, [row.content for row in rows])
        now_iso = format_timestamp(self.now())
        with read_transaction(self.conn):  # and their space is checked in the snapshot the kNN reads
            moved = self._backend.vector_space_moved(embeddings.space)  # another process's swap just now
            similar = [None if moved else duplicates.similar_existing(
                self._backend, vector, row.context, now_iso, limit=duplicates.SIMILAR_LIMIT + 1)
                for row, vector in zip(rows, embeddings.vectors)]
        with transaction(self.conn):
            # Now under the lock: a copy committed while this write waited is valid from after `now_iso`.
            keep, results = duplicates.plan_writes(self._backend, items, rows, format_timestamp(self.now()))
            self._insert_rows([rows[i] for i in keep], subset(embeddings, keep))
        for result, found in zip(results, similar):
            others = [f for f in found or () if f["id"] != result["id"]]
            result.update(similar_existing=others[:duplicates.SIMILAR_LIMIT], similar_checked=found is not None)
        return results

    @_serialized
    def get(self, memory_id: str, *, with_edges: bool = False) -> dict[str, Any]:
        """The memory record; ``NotFoundError`` if there is none.

        ``with_edges=True`` adds two keys to the record: ``state`` (what
        recall's current-state filter makes of it: ``status`` current /
        superseded / expired / archived / not_yet_valid, and ``superseded_by``
        the memory recall shows in its place) and ``edges`` (``outgoing`` and
        ``incoming`` lists, each edge naming the memory at its other end).
        """
        if not with_edges:
            return strip_non_finite(self._pk_and_record(memory_id)[1])
        with read_transaction(self.conn):  # the record, its state and its edges from one snapshot
            record = self._pk_and_record(memory_id)[1]
            state = memory_state(self._backend, record, format_timestamp(self.now()))
            return strip_non_finite({**record, "state": state,
                                     "edges": edge_store.memory_edges(self.conn, self.sql, record["id"])})

    def update(self, memory_id: str, *, redact: bool = False, **fields: Any) -> dict[str, Any]:
        """Change fields of a memory; re-embeds only when the content changed. ``redact=True``:
        as ``store``'s, on the fields given (``privacy.redact_update``)."""
        fields, _ = redact_update(fields, redact)
        unknown = set(fields) - UPDATE_FIELDS
        if unknown:
            raise ValidationError(f"Unknown memory field(s): {', '.join(sorted(unknown))}")
        # None leaves a field as it is, except for the fields where None means "clear it".
        fields = {k: v for k, v in fields.items() if v is not None or k in CLEARABLE_FIELDS}
        fields = with_tags_read(fields, "", 2)  # frames: update (1), the caller (2)
        with self._lock, storage_errors():
            pk, current = self._pk_and_record(memory_id)
            new, content_changed = merged_update(current, fields, now=self.now())
            space = self._backend.vector_space()  # what the vector below is made in
        embedding: bytes | None = None
        token_codes: tuple[int, bytes] | None = None
        embedding_changed = False
        if fields.get("embedding") is not None:
            if not self.has_vector_index:
                raise ValidationError("This store has no vector index (embedder 'none'); drop 'embedding'")
            embedding = validate_embedding(fields["embedding"], self.dimensions)
            embedding_changed = True
        elif content_changed:
            with storage_errors():  # the model runs without the store's lock: other threads' recalls go on
                embedding, token_codes = self._embed_one(new.content)
            embedding_changed = True
        embedded_content = new.content if embedding_changed else None
        with self._lock, storage_errors(), transaction(self.conn):
            # Merge onto the memory as it is now, under the write lock: another
            # process may have changed it since it was read above, and its
            # change must not be overwritten with the older values.
            pk, latest = self._pk_and_record(memory_id)
            if latest != current:
                new, content_changed = merged_update(latest, fields, now=self.now())
                if fields.get("embedding") is None:
                    embedding_changed = content_changed
                    if content_changed and new.content != embedded_content:
                        embedding, token_codes = self._embed_one(new.content)
                current = latest
            if embedding is not None:  # a reembed may have swapped the file's embedder meanwhile
                given = () if fields.get("embedding") is not None else (0,)
                moved = self._in_current_space(Embedded([embedding], [token_codes], space, given), [new.content])
                embedding, token_codes = moved.vectors[0], moved.token_codes[0]
            writes.update_memory(self.conn, self.sql, pk, MemoryRow.from_record(current), new,
                                 embedding, embedding_changed, self.has_vector_index, token_codes)
            return self.get(memory_id)

    @_serialized
    def delete(self, memory_id: str) -> None:
        """Remove a memory with its edges, tags, FTS and vector rows."""
        memory_id = validate_uuid(memory_id)
        with transaction(self.conn):  # read under the write lock: the row deleted is the row read
            pk, record = self._pk_and_record(memory_id)
            writes.delete_memory(self.conn, self.sql, pk, MemoryRow.from_record(record),
                                 self.has_vector_index)

    @_serialized
    def associate(self, memory1_id: str, memory2_id: str, type: str = "RELATES_TO",
                  strength: float = 0.5, **properties: Any) -> dict[str, Any]:
        """Create or update the edge ``memory1 -[type]-> memory2`` (idempotent per pair and type).

        ``A -[INVALIDATED_BY]-> B`` (or ``EVOLVED_INTO``) means A is superseded
        by B: recall hides A and shows B. When the pair already had an edge of
        this type the answer adds ``updated: True`` and ``previous_strength``;
        when a supersession edge closes a cycle it adds ``warnings``.
        """
        association = edge_store.validate_association(memory1_id, memory2_id, type, strength, properties)
        now = self.now()
        with transaction(self.conn):
            return edge_store.write_association(self.conn, self.sql, association, now)

    @_serialized
    def dissociate(self, memory1_id: str, memory2_id: str, type: str | None = None) -> dict[str, Any]:
        """Remove the edge ``memory1 -[type]-> memory2``, or every edge memory1 -> memory2 when
        ``type`` is None. ``NotFoundError`` when a memory or the edge does not exist.

        Returns ``{"memory1_id", "memory2_id", "relation_type", "removed": N,
        "removed_types"}``, plus ``warnings`` when memory1 stays hidden from
        recall for another reason (say, the ``t_invalid`` that ``supersede`` set).
        """
        first, second, relation = edge_store.validate_dissociation(memory1_id, memory2_id, type)
        with transaction(self.conn):
            result = edge_store.dissociate(self.conn, self.sql, first, second, relation)
            if any(t in SUPERSESSION_TYPES for t in result["removed_types"]):
                old = self._pk_and_record(first)[1]
                warning = still_hidden_warning(self._backend, old, format_timestamp(self.now()))
                if warning:
                    result["warnings"] = [warning]
        return result

    def supersede(self, old_id: str, new_content_or_id: str, *, relation: str = "INVALIDATED_BY",
                  reason: str | None = None, redact: bool = False, **store_fields: Any) -> dict[str, Any]:
        """Replace a memory by a new one (stored now, or an existing id), atomically (``redact``: as store's).

        The old memory gets ``t_invalid = now`` and supersession metadata, and
        an edge ``old -[relation]-> new`` (strength 0.9) is written. The answer
        adds ``warnings`` when that edge closes a supersession cycle.
        """
        relation = edge_store.validate_supersession(relation, reason)
        new_id: str | None = None
        rows: list[MemoryRow] = []
        embeddings = Embedded([], [])
        with self._lock, storage_errors():
            old_pk, old = self._named_record(old_id)
            if isinstance(new_content_or_id, str) and not store_fields:
                try:
                    candidate = validate_uuid(new_content_or_id)
                except ValidationError:
                    candidate = None
                if candidate is not None:
                    self._named_record(candidate)  # must exist
                    new_id = candidate
        if new_id is None:  # the new memory is embedded without the store's lock (as store's)
            kept = {} if "type" in store_fields else replacement_type(new_content_or_id, old)
            new = redact_items([{**kept, **store_fields, "content": new_content_or_id}], redact)
            with storage_errors():
                rows, embeddings = prepare_rows(self._backend, self._lock, new, frames=3)
            new_id = rows[0].id
        if new_id == old["id"]:
            raise ValidationError("A memory cannot supersede itself")
        with self._lock, storage_errors(), transaction(self.conn):
            now = self.now()
            old_pk, old = self._named_record(old_id)  # as it is now, under the write lock
            if rows:
                self._insert_rows(rows, embeddings)
            else:
                self._named_record(new_id)  # the existing memory named as the new one, still there
            return edge_store.write_supersession(self.conn, self.sql, old_pk, old, new_id, relation,
                                                 reason, now, self.has_vector_index)

    def _named_record(self, memory_id: str) -> tuple[int, dict[str, Any]]:
        """``_pk_and_record``, its ``NotFoundError`` naming the id (supersede has two)."""
        try:
            return self._pk_and_record(memory_id)
        except NotFoundError:
            raise NotFoundError(f"Memory not found: {validate_uuid(memory_id)}") from None

    # -- reads ------------------------------------------------------------

    @_serialized
    def by_tag(self, tags: Any, *, limit: int = 20, offset: int = 0, prefix: bool = False) -> dict[str, Any]:
        """Enumerate memories having any of the tags (exact, case-insensitive).

        ``prefix=True`` matches as recall's tag filter does: ``project`` finds
        ``project:alpha`` too (the response then says ``"tag_match": "prefix"``).
        """
        return strip_non_finite(by_tag_page(self.conn, self.sql, tags, limit=limit, offset=offset,
                                            prefix=prefix))

    @_serialized
    def list_memories(self, *, tags: Any = None, tag_mode: str = "any", tag_match: str = "prefix",
                      types: Any = None, context: str | None = None, since: Any = None,
                      until: Any = None, sort: str = "time_desc", limit: int = 20,
                      offset: int = 0, state: str | None = None) -> dict[str, Any]:
        """Browse: a page of every memory passing the filters, newest first by default.

        ``tags`` filter as recall's do (``tag_mode`` any/all, ``tag_match``
        prefix/exact); ``types`` are memory types; ``since``/``until`` are ISO
        8601 times or time expressions (``"last week"``); ``sort`` is one of
        ``storage.listing.SORTS``. Returns ``{"status", "count", "total",
        "limit", "offset", "has_more", "next_offset"?, "sort", "filters",
        "memories"}``. ``state``: a key of ``listing.STATE_FILTERS``; given, each memory gets
        its ``state`` (as ``get``'s) and the page ``state_counts`` (what the filter hid)."""
        now = self.now()
        now_iso = format_timestamp(now)
        with read_transaction(self.conn):  # the total and the page from one snapshot
            stuck = without_current_successor(self._backend, now_iso) if state is not None else ()
            page = list_page(
                self.conn, self.sql, now=now, tags=tags, tag_mode=tag_mode, tag_match=tag_match,
                types=types, context=context, since=since, until=until, sort=sort, limit=limit,
                offset=offset, state=state, stuck=stuck)
            if state is not None:
                states = memory_states(self._backend, page["memories"], now_iso)
                page["memories"] = [{**m, "state": states[m["id"]]} for m in page["memories"]]
            return strip_non_finite(page)

    @_serialized
    def resolve_id(self, id_or_prefix: str, field: str = "memory_id") -> str:
        """The full id that a full id or a unique prefix (at least 4 hex digits) names, as git does.

        Raises ``NotFoundError`` when no id starts with the prefix and
        ``AmbiguousIdError`` (a ``ValidationError`` with ``candidates``) when
        several do. A full UUID is returned without checking that it exists.
        """
        return resolve_id(self.conn, self.sql, id_or_prefix, field)

    @_serialized
    def states(self, memories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each memory record's ``state`` now, as ``get(with_edges=True)`` gives it, by id."""
        with read_transaction(self.conn):
            return memory_states(self._backend, memories, format_timestamp(self.now()))

    @_serialized
    def short_ids(self, ids: Iterable[str], min_length: int = 8) -> dict[str, str]:
        """Each id's shortest unique prefix of at least ``min_length`` characters (for display)."""
        with read_transaction(self.conn):
            return abbreviate_ids(self.conn, self.sql, ids, min_length)

    @functools.cached_property
    def learned_model(self) -> TreeModel | None:
        """The learned-rank model recall uses (recall/learned_rank.py): the packaged one, or
        the file ``Config.learned_rank_model`` names, read on first use; None (recall says
        so) when it cannot be read."""
        return read_learned_model(self.config.learned_rank_model)

    def _learned_model_now(self) -> TreeModel | None:
        return self.learned_model

    def warm_up(self) -> dict[str, float]:
        """Load now what the first recall and the first write would (the models, the vector
        codes); seconds per part. Servers call it in a background thread as they start."""
        return {**self._warm_recall(), **load_embedder(self.embedder)}  # the embedder has its own lock

    @_serialized
    def _warm_recall(self) -> dict[str, float]:
        return warm_up(self._backend, self._learned_model_now)

    @_serialized
    def recall(self, query: str | None = None, **params: Any) -> dict[str, Any]:
        """Hybrid recall with every parameter of AutoMem's GET /recall."""
        with self._backend.recall_snapshot():  # one read snapshot; last_accessed written after it
            response = run_recall(self._backend, {"query": query, **params}, self._learned_model_now)
        # Scores are finite by construction (recall/scoring.py); this guards
        # the numbers read from a row damaged on disk.
        return strip_non_finite(response)

    @_serialized
    def recall_v1(self, query: str, *, k: int = 5, filters: Mapping[str, Any] | None = None,
                  search_mode: str | None = None, use_rerank: bool | None = None,
                  include_explore_hints: bool = False, include_superseded: bool = False,
                  full: int | None = None, now: Any = None) -> dict[str, Any]:
        """Kagura's POST /api/v1/memory/recall: the RecallResponse body (localmem/kagura/)."""
        from .kagura import run_recall_v1  # here: a process that never asks it does not import it
        with self._backend.recall_snapshot():  # one read snapshot, as recall's: a reembed meanwhile is not half-seen
            return strip_non_finite(run_recall_v1(self._backend, {
                "query": query, "k": k, "filters": filters, "search_mode": search_mode,
                "use_rerank": use_rerank, "include_explore_hints": include_explore_hints,
                "include_superseded": include_superseded, "full": full, "now": now}, self._learned_model_now))

    @_serialized
    def related(self, memory_id: str, relationship_types: Any = None, max_depth: int = 1,
                limit: int = 5) -> dict[str, Any]:
        """Memories within ``max_depth`` (1–3) undirected hops, most important first."""
        return strip_non_finite(edge_store.related(self.conn, self.sql, memory_id, relationship_types,
                                                   max_depth, limit, self.config.relation_limit))

    def touch(self, memory_ids: list[str], when: datetime) -> None:
        """Set last_accessed for recalled memories in one write (skipped when disabled)."""
        self._backend.touch(memory_ids, when)

    @_serialized
    def state_counts(self) -> dict[str, int]:
        """How many memories recall's current-state filter keeps (``current``) and hides
        (``not_current``), by reason: ``archived``, ``not_yet_valid``, ``expired``, ``superseded``."""
        with read_transaction(self.conn):
            return state_counts(self._backend, format_timestamp(self.now()))

    @_serialized
    def health(self) -> dict[str, Any]:
        """Counts per table, whether the derived indexes agree, embedder and file facts."""
        with read_transaction(self.conn):  # one snapshot: concurrent writes cannot skew the counts
            return health_report(self._backend, self.path)
