"""Re-embed every memory with the current or a new embedder, in place.

How a store moves from ``hash`` to MiniLM, or from one sentence-transformers
model to another (of any dimension):

1. The new vectors are computed a batch at a time, outside any transaction,
   and staged in ``reembed_staging`` with a digest of the content they were
   made from; each batch is committed on its own. Recall (in this process
   and in others) keeps answering from the old vectors meanwhile, and a run
   that stops resumes where it was: the staged batches are kept, as long as
   the next run targets the same embedder.
2. When every memory is staged, memories whose content changed since are
   embedded again; then one transaction replaces ``memory_embeddings``,
   rebuilds the vector index for the new dimension, and records the new
   embedder and dimension. The old vectors are gone with it. Token codes
   (late-interaction evidence) are staged and swapped the same way, so
   re-embedding with the same embedder is also how memories stored before
   schema 8 get theirs. Other processes
   that have the file open switch to the recorded embedder on their next
   embedding (``Backend.follow_reembed``), and a write whose vectors were
   made before the swap makes them again when it commits (``MemoryStore``).

One run owns the file at a time, across processes: the owner is recorded in
the file (meta ``reembed_owner``: process, host, a token, a heartbeat each
batch moves), every staging and swap transaction checks it still owns the
file, and a second run is refused while the owner lives. An owner that died
(its process is gone, or its heartbeat is older than ``OWNER_STALE_SECONDS``)
is taken over, so a killed run still resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any

from ..embedders import Embedder, EmbedderUnavailable, embed_batch, gives_token_vectors
from ..errors import LocalMemError, ValidationError
from ..progress import ProgressBar
from ..storage import vector_index
from ..storage.database import read_transaction, transaction
from ..storage.records import rows_as_dicts
from ..storage.token_centre import centre_for
from ..storage.token_codes import encode_each
from ..validation import validate_embedding

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_BATCH = 64
MAX_BATCH = 1000
CATCH_UP_ROUNDS = 5  # passes over memories changed while staging, before the final swap
OWNER_KEY = "reembed_owner"
# A heartbeat older than this frees the file (an owner on another host, or a reused process id).
OWNER_STALE_SECONDS = 600


class ReembedBusyError(LocalMemError):
    """Another reembed owns the file (409)."""

    code = 409


def _owner_alive(owner: dict[str, Any]) -> bool:
    """Whether the recorded owner may still be running."""
    try:
        pid, beat = int(owner["pid"]), float(owner["beat"])
    except (KeyError, TypeError, ValueError):
        return False  # unreadable: nobody can be waiting on it
    if time.time() - beat > OWNER_STALE_SECONDS or pid <= 0:
        return False
    if owner.get("host") != socket.gethostname():
        return True  # cannot look: trust the heartbeat
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True


def describe_owner(owner: dict[str, Any]) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(owner.get("started", 0))))
    return f"process {owner.get('pid')} on {owner.get('host')}, started {started}"


def digest(content: str) -> bytes:
    return hashlib.blake2b(content.encode("utf-8"), digest_size=16).digest()


def _embed(embedder: Embedder, dims: int, texts: list[str], centre: Any = None
           ) -> list[tuple[bytes, tuple[int, bytes] | None]]:
    """Each text's vector, and its token codes when a token ``centre`` is given."""
    try:
        vectors, tokens = embed_batch(embedder, texts, with_tokens=centre is not None)
    except EmbedderUnavailable as exc:
        raise LocalMemError(f"embedder {embedder.name!r} cannot run: {exc}") from exc
    codes = encode_each(tokens, centre) if centre is not None else [None] * len(texts)
    return [(validate_embedding(v, dims), c) for v, c in zip(vectors, codes)]


class Reembedder:
    """One re-embedding run of ``store`` with ``embedder`` (default: the store's own)."""

    def __init__(self, store: MemoryStore, embedder: Embedder | None = None, *,
                 batch_size: int = DEFAULT_BATCH, progress: ProgressBar | None = None) -> None:
        target = embedder if embedder is not None else store.embedder
        if target is None:
            raise ValidationError("reembed needs an embedder: give one (such as --embedder hash:384 or a "
                                  "sentence-transformers model), not 'none'")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or not 1 <= batch_size <= MAX_BATCH:
            raise ValidationError(f"'batch_size' must be an integer from 1 to {MAX_BATCH}")
        try:
            self.dims = int(target.dimensions)
        except EmbedderUnavailable as exc:
            raise ValidationError(f"embedder {target.name!r} cannot run here: {exc}") from exc
        self.store = store
        self.embedder = target
        self.batch_size = batch_size
        self.bar = progress
        self.centre: Any = None  # the token centre of the target embedder, once known (_prepare)
        self.token = uuid.uuid4().hex  # this run's claim on the file (OWNER_KEY)
        self.started = time.time()
        self.claimed = False

    # -- ownership ----------------------------------------------------------------

    def _owner(self) -> dict[str, Any] | None:
        raw = self.store.backend.meta(OWNER_KEY)
        try:
            owner = json.loads(raw) if raw else None
        except ValueError:
            return None
        return owner if isinstance(owner, dict) else None

    def _hold(self, *, claim: bool = False) -> None:
        """Inside a write transaction: record this run as the file's owner (moving its heartbeat);
        ``ReembedBusyError`` when another run owns it (``claim``: unless that one is gone)."""
        owner = self._owner()
        if owner is not None and owner.get("token") != self.token:
            if not claim:
                raise ReembedBusyError(f"another reembed took this file over ({describe_owner(owner)}); "
                                       "this one stopped without swapping anything")
            if _owner_alive(owner):
                raise ReembedBusyError(f"another reembed is running on this file ({describe_owner(owner)}); "
                                       "wait for it to finish (one reembed at a time per file)")
        record = {"pid": os.getpid(), "host": socket.gethostname(), "token": self.token,
                  "started": self.started, "beat": time.time()}
        self.store.conn.execute(self.store.sql["meta_set"], {"key": OWNER_KEY, "value": json.dumps(record)})
        self.claimed = True

    def _release(self) -> None:
        if not self.claimed:  # refused, or failed before claiming: nothing to give back
            return
        store = self.store
        with store.lock, transaction(store.conn):
            owner = self._owner()
            if owner is not None and owner.get("token") == self.token:
                store.conn.execute(store.sql["meta_delete"], {"key": OWNER_KEY})

    # -- steps ----------------------------------------------------------------

    def _prepare(self) -> None:
        """Keep staged vectors only if they were made by this embedder (a resumed run)."""
        store = self.store
        with store.lock, transaction(store.conn):
            self._hold(claim=True)
            name, dims = store.backend.meta("reembed_target"), store.backend.meta("reembed_dimensions")
            if name != self.embedder.name or dims != str(self.dims):
                store.conn.execute(store.sql["reembed_clear"])
                for key, value in (("reembed_target", self.embedder.name), ("reembed_dimensions", str(self.dims))):
                    store.conn.execute(store.sql["meta_set"], {"key": key, "value": value})
        if store.config.token_evidence and gives_token_vectors(self.embedder):
            with store.lock:
                try:
                    self.centre = centre_for(store.conn, store.sql, self.embedder,  # type: ignore[arg-type]
                                             self.dims, store.now(), record=True)
                except EmbedderUnavailable as exc:
                    raise LocalMemError(f"embedder {self.embedder.name!r} cannot run: {exc}") from exc

    def counts(self) -> dict[str, int]:
        store = self.store
        with store.lock, read_transaction(store.conn):
            return next(rows_as_dicts(store.conn.execute(store.sql["reembed_counts"])))

    def _stage(self, rows: list[dict[str, Any]]) -> None:
        embedded = _embed(self.embedder, self.dims, [r["content"] for r in rows], self.centre)  # no lock held
        store = self.store
        with store.lock, transaction(store.conn):
            self._write_staged(rows, embedded)

    def _write_staged(self, rows: list[dict[str, Any]],
                      embedded: list[tuple[bytes, tuple[int, bytes] | None]]) -> None:
        self._hold()
        for row, (vector, codes) in zip(rows, embedded):
            self.store.conn.execute(self.store.sql["reembed_stage"], {
                "pk": row["pk"], "embedding": vector, "digest": digest(row["content"]),
                "tokens": codes[0] if codes else None, "codes": codes[1] if codes else None})

    def _stale(self) -> list[dict[str, Any]]:
        store = self.store
        with store.lock, read_transaction(store.conn):
            rows = list(rows_as_dicts(store.conn.execute(store.sql["reembed_staged"])))
        return [r for r in rows if r["digest"] != digest(r["content"])]

    def run(self, limit: int | None = None) -> dict[str, Any]:
        """Stage up to ``limit`` memories (all by default); swap once every memory is staged."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValidationError("'limit' must be a positive integer")
        started = time.perf_counter()
        store = self.store
        with store.lock:  # the connection is shared with the store's other users (an HTTP server's)
            previous = {"embedder": store.backend.meta("embedder"), "dimensions": store.dimensions}
        try:
            self._prepare()  # claims the file, or ReembedBusyError
            return self._run(limit, started, previous)
        finally:
            self._release()

    def _run(self, limit: int | None, started: float, previous: dict[str, Any]) -> dict[str, Any]:
        store = self.store
        counts = self.counts()
        todo = counts["total"] - counts["staged"]
        if self.bar is not None:
            self.bar.restart("re-embedding", min(todo, limit) if limit else todo)
        processed, after = 0, 0
        while limit is None or processed < limit:
            size = self.batch_size if limit is None else min(self.batch_size, limit - processed)
            with store.lock, read_transaction(store.conn):
                rows = list(rows_as_dicts(store.conn.execute(
                    store.sql["reembed_unstaged"], {"after": after, "limit": size})))
            if not rows:
                break
            self._stage(rows)
            processed += len(rows)
            after = rows[-1]["pk"]
            if self.bar is not None:
                self.bar.advance(len(rows))
        counts = self.counts()
        remaining = counts["total"] - counts["staged"]
        report: dict[str, Any] = {
            "processed": processed, "total": counts["total"], "remaining": remaining,
            "embedder": self.embedder.name, "dimensions": self.dims, "previous": previous,
        }
        if remaining == 0:
            report["processed"] += self._swap()
            report["status"] = "complete"
        else:
            report["status"] = "in_progress"
        seconds = time.perf_counter() - started
        report["seconds"] = round(seconds, 3)
        report["memories_per_second"] = round(report["processed"] / seconds, 1) if seconds and report["processed"] else None
        return report

    def _swap(self) -> int:
        """Embed what changed while staging, then make the staged vectors the store's. Returns
        how many memories were embedded again for that."""
        again = 0
        for _ in range(CATCH_UP_ROUNDS):
            stale = self._stale()
            if not stale:
                break
            for start in range(0, len(stale), self.batch_size):
                self._stage(stale[start:start + self.batch_size])
            again += len(stale)
        store = self.store
        with store.lock:
            with transaction(store.conn):
                # Under the write lock nothing changes any more: the last stragglers, then the swap.
                self._hold()
                stale = self._stale_locked()
                if stale:
                    self._write_staged(stale, _embed(self.embedder, self.dims,
                                                     [r["content"] for r in stale], self.centre))
                    again += len(stale)
                for _ in store.conn.execute(store.sql["reembed_swap"]):
                    pass
                vector_index.rebuild(store.conn, store.sql, self.dims)
                store.conn.execute(store.sql["meta_set"], {"key": "embedder", "value": self.embedder.name})
                store.conn.execute(store.sql["meta_set"], {"key": "dimensions", "value": str(self.dims)})
            store.backend.adopt_embedder(self.embedder, self.dims)
        return again

    def _stale_locked(self) -> list[dict[str, Any]]:
        rows = rows_as_dicts(self.store.conn.execute(self.store.sql["reembed_staged"]))
        return [r for r in rows if r["digest"] != digest(r["content"])]


def reembed(store: MemoryStore, embedder: Embedder | None = None, *, batch_size: int = DEFAULT_BATCH,
            limit: int | None = None, progress: ProgressBar | None = None) -> dict[str, Any]:
    """Re-embed ``store`` with ``embedder`` (default: its own); see the module's description."""
    return Reembedder(store, embedder, batch_size=batch_size, progress=progress).run(limit)
