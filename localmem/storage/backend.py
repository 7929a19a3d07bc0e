"""Backend: what the recall pipelines read and write through.

``MemoryStore`` owns one ``Backend``: the open connection, its statements,
the embedder, the configuration and the clock. The pipelines (``recall/``,
``kagura/``) are handed the backend, never the store, so they depend on
nothing above the storage layer.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import OrderedDict
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, NamedTuple

import apsw
import numpy as np

from ..config import Config
from ..embedders import (Embedder, EmbedderUnavailable, embed_batch, gives_token_vectors, resolve_embedder,
                         spec_for_recorded_name)
from ..errors import ConfigError, StorageError
from ..timeparse import format_timestamp
from ..validation import validate_embedding
from . import vector_index
from .aside import AsideThreads
from .code_search import CodeIndex
from .token_centre import centre_for
from .token_codes import encode_each
from .database import read_transaction, transaction
from .hybrid_clock import register_wall_clock
from .statements import Statements

if TYPE_CHECKING:
    from ..embedders.query_delta import QueryDelta

# How long recall's last_accessed write waits for the write lock before it is skipped.
TOUCH_WAIT_MS = 500
# Entries a content cache holds before it starts over (bounds its memory).
CONTENT_CACHE_ENTRIES = 4096


QUERY_CACHE_SIZE = 64


class QueryEncoding(NamedTuple):
    """One query's encodings (``Backend.embed_query``)."""

    vector: bytes  # the plain model's unit vector (float32 bytes), comparable with the stored ones
    tokens: Any  # its token vectors (None without token evidence)
    tuned: np.ndarray | None  # its token vectors from the model with the query delta applied
    tuned_error: str | None  # why there are none when a delta was asked for


def fts_tokenizer(conn: apsw.Connection) -> Any:
    """The FTS5 tokenizer of the full-text index (porter over unicode61), callable from Python."""
    return conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])


def remembered(cache: dict[Any, Any] | None, key: Any, compute: Callable[[], Any]) -> Any:
    """``cache[key]``, computed and kept when absent (``cache`` from Backend.content_cache;
    None, inside a write transaction: computed and not kept)."""
    if cache is None:
        return compute()
    value = cache.get(key)
    if value is None:
        value = cache[key] = compute()
    return value


class Backend:
    """One open database and what answers from it: connection, statements, embedder, config, clock.

    ``dimensions`` is the vector length the file records (None: no vector
    index yet). ``embedder_error`` keeps why the embedder could not run.
    ``reranker`` is Kagura's cross-encoder, once resolved.
    """

    def __init__(self, conn: apsw.Connection, sql: Statements, *, config: Config,
                 embedder: Embedder | None, clock: Callable[[], datetime]) -> None:
        self.conn = conn
        self.sql = sql
        self.config = config
        self.embedder = embedder
        self.clock = clock
        register_wall_clock(conn, lambda: self.clock())  # the change-log stamps follow the store's clock
        self.dimensions: int | None = None
        self.embedder_error: str | None = None
        self.reranker: tuple[Any, str | None] | None = None
        self._tokenizer: Any = None
        # While a recall reads its snapshot, last_accessed writes wait here.
        self.touch_queue: list[tuple[list[str], datetime]] | None = None
        # The embedder and dimension the file recorded when this backend last looked.
        self._recorded: tuple[str | None, str | None] = (None, None)
        self.code_index = CodeIndex()
        self._content_cache: tuple[Any, dict[Any, Any]] = (None, {})
        # (embedder name, the file's restore token, centre)
        self._token_centre: tuple[str, str | None, np.ndarray] | None = None
        self._query_cache: OrderedDict[tuple[Any, ...], QueryEncoding] = OrderedDict()  # embed_query's
        self.aside = AsideThreads()  # recall's work beside its reads (query encoding, token matches)
        # The content generation, read once per recall snapshot (recall_snapshot): it cannot move
        # inside one, and a recall asks for the content cache a dozen times.
        self._snapshot_generation: tuple[Any, ...] | None = None
        self._in_snapshot = False

    @property
    def has_vector_index(self) -> bool:
        return self.dimensions is not None

    def now(self) -> datetime:
        return self.clock()

    def meta(self, key: str) -> str | None:
        row = self.conn.execute(self.sql["meta_get"], {"key": key}).fetchone()
        return row[0] if row else None

    def content_cache(self) -> dict[Any, Any] | None:
        """A dict for values derived from the file's content (document frequencies,
        keyword top lists), emptied whenever that content may have changed.

        The generation is the change counter every memory write and deletion
        moves (sync_clock), not recall's own last_accessed writes, so the cache
        survives recalls with access tracking on; with the token a restore
        writes, as a restore takes the counter back. None inside a write
        transaction: its changes may yet roll back, so nothing read there is
        kept.
        """
        conn = self.conn
        if conn.txn_state("main") == apsw.SQLITE_TXN_WRITE:
            return None
        generation = self._snapshot_generation
        if generation is None:
            generation = tuple(conn.execute(self.sql["content_generation"]).fetchone())
            if self._in_snapshot:
                self._snapshot_generation = generation
        known, cache = self._content_cache
        if known != generation or len(cache) >= CONTENT_CACHE_ENTRIES:
            cache = {}
            self._content_cache = (generation, cache)
        return cache

    @contextmanager
    def recall_snapshot(self) -> Iterator[None]:
        """One read snapshot for every statement of a recall (no write lock): last_accessed
        writes are queued and done after it ends, and the content generation is read once.
        Inside another recall's snapshot, or another transaction, it adds nothing."""
        if self.touch_queue is not None or self.conn.in_transaction:
            yield
            return
        self.touch_queue, self._in_snapshot = [], True
        try:
            with read_transaction(self.conn):
                yield
        finally:
            queued, self.touch_queue = self.touch_queue, None
            self._in_snapshot, self._snapshot_generation = False, None
        for memory_ids, when in queued:
            self.touch(memory_ids, when)

    def settle_dimensions(self, path: str) -> None:
        """Compare the embedder with what the file recorded; create the vector index once known.

        Sets ``dimensions``; a dimension that differs from the file's raises ``ConfigError``.
        """
        self.dimensions = self._dimensions_for(path)
        self._recorded = self._recorded_vectors()

    def _recorded_vectors(self) -> tuple[str | None, str | None]:
        row = self.conn.execute(self.sql["meta_recorded_vectors"]).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def adopt_embedder(self, embedder: Embedder, dims: int) -> None:
        """Use ``embedder`` from now on: the file was just re-embedded with it (maintenance.reembed)."""
        self.embedder = embedder
        self.dimensions = dims
        self.embedder_error = None
        self._recorded = self._recorded_vectors()

    def vector_space(self) -> tuple[str | None, str | None]:
        """The embedder and dimension the file records, as of now (after following a reembed
        another process made): what vectors embedded next are made in. A writer keeps it with
        its vectors and asks ``vector_space_moved`` inside its write transaction."""
        self.follow_reembed()
        return self._recorded

    def vector_space_moved(self, space: tuple[str | None, str | None] | None) -> bool:
        """Inside a write transaction: whether a reembed swapped the file's embedder or dimension
        since ``space`` (from ``vector_space``); then vectors made in ``space`` must not be written
        (``follow_reembed`` switches to the file's embedder first)."""
        if space is None:
            return False
        moved = self._recorded_vectors() != space
        if moved:
            self.follow_reembed()
        return moved

    def follow_reembed(self) -> None:
        """If another process re-embedded the file since, switch to the embedder it recorded.

        A model that cannot be loaded here leaves the vector channel off (with
        ``embedder_error`` saying why) rather than mixing two vector spaces.
        """
        recorded = self._recorded_vectors()
        if recorded == self._recorded:
            return
        self._recorded = recorded
        name, dims = recorded
        if name is None or dims is None:
            return
        if self.embedder is not None and self.embedder.name == name and self.dimensions == int(dims):
            return
        self.dimensions = int(dims)
        try:
            embedder = resolve_embedder(spec_for_recorded_name(name))
            if embedder is None or int(embedder.dimensions) != int(dims):
                raise ConfigError(f"{name!r} does not give {dims} dimensions here")
        except (ConfigError, EmbedderUnavailable) as exc:
            self.embedder_error = (f"the database was re-embedded with {name!r} ({dims} dimensions) by "
                                   f"another process, and that embedder cannot run here: {exc}")
            self.embedder = None
            return
        self.embedder, self.embedder_error = embedder, None

    def _dimensions_for(self, path: str) -> int | None:
        stored = self.meta("dimensions")
        stored_dims = int(stored) if stored else None
        if self.embedder is None:
            return stored_dims
        try:
            dims = int(self.embedder.dimensions)
        except EmbedderUnavailable as exc:
            self.embedder_error = str(exc)
            return stored_dims
        if dims <= 0:
            raise ConfigError(f"Embedder {self.embedder.name!r} reports {dims} dimensions")
        if stored_dims is not None and stored_dims != dims:
            raise self._mismatch(path, stored_dims, dims)
        if stored_dims is None and self.conn.readonly("main"):
            return None  # nothing was ever embedded, and a read-only file gets no vector index
        if stored_dims is None:
            with transaction(self.conn):
                recorded = self.meta("dimensions")  # another process may have just recorded it
                if recorded is not None and int(recorded) != dims:
                    raise self._mismatch(path, int(recorded), dims)
                self.conn.execute(self.sql["meta_set"], {"key": "dimensions", "value": str(dims)})
                self.conn.execute(self.sql["meta_set"], {"key": "embedder", "value": self.embedder.name})
                vector_index.create(self.conn, self.sql, dims)
        elif self.meta("embedder") != self.embedder.name:
            warnings.warn(
                f"Database {path} was embedded with {self.meta('embedder')!r}; "
                f"opening it with {self.embedder.name!r} (same dimension) mixes vector spaces",
                stacklevel=4,  # the caller of MemoryStore(...)
            )
        return dims

    def _mismatch(self, path: str, recorded: int, dims: int) -> ConfigError:
        assert self.embedder is not None
        return ConfigError(
            f"Embedding dimension mismatch: the database {path} was created with "
            f"{self.meta('embedder')!r} ({recorded} dimensions), but embedder "
            f"{self.embedder.name!r} has {dims} dimensions")

    def vector_knn(self, query_vector: bytes, k: int,
                   window: tuple[float | None, float | None] = (None, None),
                   among: str | None = None) -> dict[str, Any] | None:
        """Bindings of vector_knn.sql for the ``k`` nearest memories in a time window (unix
        seconds) and, if given, among the pks listed in ``among`` (comma-separated); None
        when this connection's uncommitted writes keep the code scan from answering (the
        caller scores exactly instead)."""
        start, end = window
        bounds = None if start is None and end is None else (
            -math.inf if start is None else start, math.inf if end is None else end)
        # Text to int64 in C (a Python split is 6× slower on 20,000 keys).
        listed = None if among is None else np.fromstring(among, dtype=np.int64, sep=",")
        hits = self.code_index.candidates(self.conn, self.sql, query_vector, k, bounds, listed)
        return None if hits is None else vector_index.knn_parameters(query_vector, hits, k)

    def query_tokens(self, text: str) -> list[str]:
        """``text`` as the full-text index tokenizes it (porter-stemmed, lowercased)."""
        if self._tokenizer is None:
            self._tokenizer = fts_tokenizer(self.conn)
        return list(self._tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                                    include_offsets=False, include_colocated=False))

    def embed_texts(self, texts: list[str]) -> list[bytes] | None:
        """Embed texts as float32 bytes; None when the embedder is missing or fails to load."""
        found = self._embed(texts, with_tokens=False)
        return None if found is None else found[0]

    @property
    def token_evidence(self) -> bool:
        """Whether token codes are written and read: the lever is on and the embedder gives token vectors."""
        return self.config.token_evidence and self.embedder is not None and gives_token_vectors(self.embedder)

    def embed_texts_and_tokens(self, texts: list[str], lock: ContextManager[Any] | None = None
                               ) -> tuple[list[bytes], list[Any]] | None:
        """``embed_texts``, and each text's token vectors (float32 arrays, or None each
        when there is no token evidence), from one pass of the model. ``lock``: held for the
        file's reads before the model runs, not while it runs (a caller holding it keeps it)."""
        return self._embed(texts, with_tokens=True, lock=lock)

    def embed_query_tokens(self, text: str, delta: QueryDelta) -> np.ndarray:
        """One query's token vectors from the embedder with ``delta`` applied to its layers
        (embedders/query_delta.py; the stored memories keep the plain model's); ValueError
        saying why when it cannot be applied."""
        apply = getattr(self.embedder, "embed_query_tokens", None)
        if not self.token_evidence or not callable(apply):
            raise ValueError(f"embedder {getattr(self.embedder, 'name', None)!r} cannot apply a query delta")
        try:
            found = apply([text], delta)
        except EmbedderUnavailable as exc:
            self.embedder_error = str(exc)
            raise ValueError(str(exc)) from exc
        tokens = self._tuned_tokens(found[0] if len(found) == 1 else None)
        if isinstance(tokens, str):
            raise ValueError(tokens)
        return tokens

    def embed_query(self, text: str, delta: QueryDelta | None) -> QueryEncoding | None:
        """One query's vector and token vectors (``embed_texts_and_tokens``) and, given a
        ``delta``, its token vectors from the embedder with the delta applied: from one run
        of the model when the embedder encodes both at once (``OnnxEmbedder.embed_query``),
        else from a second pass. A delta that cannot be applied leaves ``tuned`` None and
        says why in ``tuned_error``; None as ``embed_texts``.

        The last ``QUERY_CACHE_SIZE`` encodings are kept (their arrays read-only): a hook asks
        the same prompt in two scopes, and a warm process is asked the same text again."""
        return self._query_encoding(text, delta, aside=False)[0]()

    def embed_query_soon(self, text: str, delta: QueryDelta | None) -> Callable[[], QueryEncoding | None] | None:
        """``embed_query``'s answer as a function to call for it, the embedder's run started
        now on another thread, when the encoding is one run of the embedder
        (``OnnxEmbedder.embed_query``) not kept already: onnxruntime lets go of the GIL, so
        the caller can read the store meanwhile (the connection stays on its thread). None
        when there is no such run: ``embed_query`` then. The answer is the same either way."""
        finish, aside = self._query_encoding(text, delta, aside=True)
        return finish if aside else None

    def _query_encoding(self, text: str, delta: QueryDelta | None, *,
                        aside: bool) -> tuple[Callable[[], QueryEncoding | None], bool]:
        """(the function giving embed_query's answer, whether the embedder runs on another thread)."""
        self.follow_reembed()  # may switch the embedder
        key = (id(self.embedder), getattr(self.embedder, "name", None), self.dimensions, self.token_evidence,
               text, None if delta is None else delta.digest)
        cached = self._query_cache.get(key)
        if cached is not None:
            self._query_cache.move_to_end(key)
            return (lambda: cached), False
        combined = getattr(self.embedder, "embed_query", None)
        run = None
        if delta is not None and callable(combined) and self.token_evidence and self.has_vector_index:
            run = self.aside.submit(combined, text, delta) if aside else (lambda: combined(text, delta))

        def finish() -> QueryEncoding | None:
            found = self._embed_query(text, delta, run)
            if found is not None:
                for array in (found.tokens, found.tuned):
                    if isinstance(array, np.ndarray):
                        array.flags.writeable = False
                self._query_cache[key] = found
                if len(self._query_cache) > QUERY_CACHE_SIZE:
                    self._query_cache.popitem(last=False)
            return found
        return finish, aside and run is not None

    def _embed_query(self, text: str, delta: QueryDelta | None,
                     run: Callable[[], Any] | None) -> QueryEncoding | None:
        """The encoding from ``run`` (the embedder's one run for both), else from two passes."""
        if run is not None:
            try:
                vector, tokens, tuned = run()
            except (ValueError, EmbedderUnavailable) as exc:
                found = self._embed([text], with_tokens=True)
                return None if found is None else QueryEncoding(found[0][0], found[1][0], None, str(exc))
            checked = self._tuned_tokens(tuned)
            return QueryEncoding(validate_embedding(vector, self.dimensions), tokens,
                                 checked if isinstance(checked, np.ndarray) else None,
                                 None if isinstance(checked, np.ndarray) else checked)
        found = self._embed([text], with_tokens=True)
        if found is None:
            return None
        encoding = QueryEncoding(found[0][0], found[1][0], None, None)
        if delta is None:
            return encoding
        try:
            return encoding._replace(tuned=self.embed_query_tokens(text, delta))
        except ValueError as exc:
            return encoding._replace(tuned_error=str(exc))

    def _tuned_tokens(self, found: Any) -> np.ndarray | str:
        """Token vectors from a tuned query encoding, checked; else why they are unusable."""
        tokens = np.asarray(found, dtype=np.float32) if found is not None else None
        if tokens is None or tokens.ndim != 2 or tokens.shape[1] != self.dimensions \
                or not np.isfinite(tokens).all():
            return (f"embedder {getattr(self.embedder, 'name', None)!r} returned no finite "
                    f"{self.dimensions}-dimensional token vectors with the query delta")
        return tokens

    def _embed(self, texts: list[str], *, with_tokens: bool,
               lock: ContextManager[Any] | None = None) -> tuple[list[bytes], list[Any]] | None:
        with lock if lock is not None else nullcontext():  # the file's reads; the model runs after
            if texts:
                self.follow_reembed()
            embedder, dimensions = self.embedder, self.dimensions
            if embedder is None or not self.has_vector_index or not texts:
                return None
            with_tokens = with_tokens and self.token_evidence  # asked after follow_reembed may switch the embedder
        try:
            vectors, tokens = embed_batch(embedder, texts, with_tokens=with_tokens)
        except EmbedderUnavailable as exc:
            self.embedder_error = str(exc)
            return None
        return [validate_embedding(v, dimensions) for v in vectors], tokens

    def token_centre(self, *, record: bool) -> np.ndarray | None:
        """The centre of this file's token codes for the current embedder. With ``record``
        (a writer about to store codes) one is measured and recorded when the file has
        none; without it (recall) None then, as no code can exist yet."""
        if not self.token_evidence or not self.dimensions:
            return None
        name = self.embedder.name  # type: ignore[union-attr]
        restored = self.meta("restore_token")  # a restore may bring another centre
        if self._token_centre is not None and self._token_centre[:2] == (name, restored):
            return self._token_centre[2]
        try:
            centre = centre_for(self.conn, self.sql, self.embedder,  # type: ignore[arg-type]
                                self.dimensions, self.now(), record=record)
        except EmbedderUnavailable as exc:
            self.embedder_error = str(exc)
            return None
        if centre is not None:
            self._token_centre = (name, restored, centre)
        return centre

    def token_codes(self, token_vectors: list[Any]) -> list[tuple[int, bytes] | None]:
        """Each text's token codes (from ``embed_texts_and_tokens``) against the file's
        centre, measured and recorded first when there is none; None for a text with
        no token vectors or when the file takes none."""
        if all(t is None for t in token_vectors):
            return [None] * len(token_vectors)
        centre = self.token_centre(record=True)
        if centre is None:
            return [None] * len(token_vectors)
        return encode_each(token_vectors, centre)

    def touch(self, memory_ids: list[str], when: datetime) -> None:
        """Set last_accessed for recalled memories in one write (skipped when disabled)."""
        if not memory_ids or not self.config.track_access:
            return
        if self.touch_queue is not None:  # inside recall's read snapshot: write after it
            self.touch_queue.append((list(memory_ids), when))
            return
        try:
            with transaction(self.conn, busy_timeout_ms=TOUCH_WAIT_MS):
                self.conn.execute(self.sql["touch_last_accessed"],
                                  {"now": format_timestamp(when), "ids": json.dumps(memory_ids)})
        except StorageError:
            pass  # read-only file, or writers kept the lock: last_accessed is advisory
