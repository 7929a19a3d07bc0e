"""What a write embedded, and making it again when a reembed swapped the file's model meanwhile.

Writers embed before they take the write lock (embedding is slow); a
``reembed`` that commits its swap in between would otherwise leave the old
model's vectors (or vectors of the old dimension, which the vector index
refuses with a raw error) in a file that records the new model.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, NamedTuple

from ..errors import ValidationError
from ..validation import validate_embedding
from . import memory_fields
from .backend import Backend
from .records import MemoryRow


class Embedded(NamedTuple):
    """What embedding a batch of texts gave: float32 vectors and token codes, per text; the
    file's embedder and dimension when they were made (``Backend.vector_space``); and which
    texts were embedded here (the others carry a caller's ``embedding``)."""

    vectors: list[bytes | None]
    token_codes: list[tuple[int, bytes] | None]
    space: tuple[str | None, str | None] | None = None
    embedded_here: tuple[int, ...] = ()


def embed_contents(backend: Backend, lock: threading.RLock, texts: list[str]) -> Embedded | None:
    """Vectors and token codes of texts; None when the embedder cannot run. The store's ``lock``
    is taken for the file's reads and writes around the model, not while it runs (unless held)."""
    with lock:
        space = backend.vector_space()
    found = backend.embed_texts_and_tokens(texts, lock)
    if found is None:
        return None
    with lock:
        codes = backend.token_codes(found[1])
    return Embedded(list(found[0]), codes, space, tuple(range(len(texts))))


def prepare_rows(backend: Backend, lock: threading.RLock, items: list[Mapping[str, Any]], *,
                 batch_size: int = 256, progress: Any = None, frames: int = 4) -> tuple[list[MemoryRow], Embedded]:
    """Validate items and compute their embeddings and token codes (outside any transaction); ``progress``
    (a ``ProgressBar``) advances per batch. ``frames``: from here to the public method's caller (where tag
    warnings point): prepare_rows (1), [_write,] store*/supersede, _serialized, the caller (4 or 5)."""
    now = backend.now()
    with lock:
        space = backend.vector_space()  # before any vector is made: what they are made in
    rows = memory_fields.build_rows(items, now=now, frames=frames)
    ids = [row.id for row in rows]
    if len(set(ids)) != len(ids):
        raise ValidationError("Duplicate ids in one batch")
    embeddings: list[bytes | None] = [None] * len(rows)
    codes: list[tuple[int, bytes] | None] = [None] * len(rows)
    to_embed: list[int] = []
    for index, item in enumerate(items):
        if item.get("embedding") is not None:
            if not backend.has_vector_index:
                raise ValidationError("This store has no vector index (embedder 'none'); drop 'embedding'")
            embeddings[index] = validate_embedding(item["embedding"], backend.dimensions)
        else:
            to_embed.append(index)
    for start in range(0, len(to_embed), batch_size):
        chunk = to_embed[start:start + batch_size]
        found = embed_contents(backend, lock, [rows[i].content for i in chunk])
        if found is not None:
            for i, vector, code in zip(chunk, found.vectors, found.token_codes):
                embeddings[i], codes[i] = vector, code
        if progress is not None:
            progress.advance(len(chunk))
    return rows, Embedded(embeddings, codes, space, tuple(to_embed))


def in_current_space(backend: Backend, prepared: Embedded, texts: list[str],
                     embed: Callable[[list[str]], Embedded | None]) -> Embedded:
    """Inside the write transaction: ``prepared`` as the file's embedder makes it now.

    Unchanged unless a reembed swapped the file's embedder since ``prepared``
    was made; then the texts embedded here are embedded again (``embed``, by
    the embedder the file records, under the lock), and a caller's own
    ``embedding`` of another dimension is refused (400).
    """
    if not backend.vector_space_moved(prepared.space):
        return prepared
    vectors, codes = list(prepared.vectors), list(prepared.token_codes)
    for index, vector in enumerate(vectors):
        if index not in prepared.embedded_here and vector is not None \
                and len(vector) != 4 * (backend.dimensions or 0):
            raise ValidationError(
                f"'embedding' has {len(vector) // 4} dimensions, but the store was re-embedded with "
                f"{backend.meta('embedder')!r} ({backend.dimensions} dimensions) while this write waited")
    redo = [i for i in prepared.embedded_here if i < len(texts)]
    found = embed([texts[i] for i in redo]) if redo else None
    for position, index in enumerate(redo):
        # None: the file's new embedder cannot run here; no vector beats a stale one
        vectors[index], codes[index] = ((found.vectors[position], found.token_codes[position])
                                        if found is not None else (None, None))
    return Embedded(vectors, codes, backend.vector_space(), prepared.embedded_here)


def subset(prepared: Embedded, keep: list[int]) -> Embedded:
    """``prepared`` for the texts at ``keep`` only (in that order): what a deduped batch inserts."""
    if len(keep) == len(prepared.vectors):
        return prepared
    here = set(prepared.embedded_here)
    return Embedded([prepared.vectors[i] for i in keep], [prepared.token_codes[i] for i in keep],
                    prepared.space, tuple(p for p, i in enumerate(keep) if i in here))


class PreparedWrite(NamedTuple):
    """Items checked, redacted (when ``redacted``) and embedded ahead of their write
    (``MemoryStore.prepare_many``): what ``store_many_checked`` then writes without the model."""

    items: list[Mapping[str, Any]]
    rows: list[MemoryRow]
    embedded: Embedded
    redacted: bool

    def subset(self, keep: list[int]) -> "PreparedWrite":
        """Only the items at ``keep`` (in that order): what a caller still writes after its own checks."""
        return PreparedWrite([self.items[i] for i in keep], [self.rows[i] for i in keep],
                             subset(self.embedded, keep), self.redacted)
