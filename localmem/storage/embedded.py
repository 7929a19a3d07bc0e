"""What a write embedded, and making it again when a reembed swapped the file's model meanwhile.

Writers embed before they take the write lock (embedding is slow); a
``reembed`` that commits its swap in between would otherwise leave the old
model's vectors (or vectors of the old dimension, which the vector index
refuses with a raw error) in a file that records the new model.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

from ..errors import ValidationError
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
