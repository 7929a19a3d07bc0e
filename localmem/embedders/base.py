"""What an embedder is: the protocol the store needs, the error it raises, and a stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ConfigError, LocalMemError
from .model_files import known_dimensions

if TYPE_CHECKING:
    import numpy as np


class EmbedderUnavailable(LocalMemError):
    """The embedding model cannot be loaded or run; the vector channel is off."""

    code = 503


@runtime_checkable
class Embedder(Protocol):
    """What the store needs from an embedder. Any object with these will do."""

    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector of ``dimensions`` floats per text."""
        ...


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An embedder that can also return the vectors of each text's tokens
    (for late-interaction evidence, ``recall/late_interaction.py``)."""

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list["np.ndarray"]]:
        """Per text: the pooled unit vector, and a (tokens x dimensions) float32 array
        of its token vectors, special tokens (such as [CLS] and [SEP]) left out."""
        ...


def embed_batch(embedder: Embedder, texts: list[str], *, with_tokens: bool) -> tuple[list[Any], list[Any]]:
    """The embedder's vectors for ``texts`` and, ``with_tokens``, each text's token vectors
    from the same pass (else None each); ConfigError when it answers for other counts."""
    texts = list(texts)
    if with_tokens:
        vectors, tokens = embedder.embed_with_tokens(texts)  # type: ignore[attr-defined]
    else:
        vectors, tokens = embedder.embed(texts), [None] * len(texts)
    if len(vectors) != len(texts) or len(tokens) != len(texts):
        raise ConfigError(f"Embedder {embedder.name!r} returned {len(vectors)} vectors for {len(texts)} texts")
    return list(vectors), list(tokens)


def gives_token_vectors(embedder: object) -> bool:
    """Whether ``embedder`` is a TokenEmbedder (has ``embed_with_tokens``)."""
    return callable(getattr(embedder, "embed_with_tokens", None))


class OnnxExportError(EmbedderUnavailable):
    """The model cannot be exported to ONNX, or the export disagrees with sentence-transformers."""


class UnavailableEmbedder:
    """Stands in for an embedder that cannot run; ``embed()`` always raises.

    ``dimensions`` is still known when the model files or the table of
    well-known models say so, so a store can open and record it.
    """

    def __init__(self, name: str, reason: str, *, dimensions: int | None = None) -> None:
        self.name = name
        self.reason = reason
        self._dimensions = dimensions if dimensions is not None else known_dimensions(name)

    def __repr__(self) -> str:
        return f"UnavailableEmbedder({self.name!r}, {self.reason!r})"

    @property
    def dimensions(self) -> int:
        """The model's dimension; raises ``EmbedderUnavailable`` if it cannot be known."""
        if self._dimensions is None:
            raise EmbedderUnavailable(
                f"embedding model {self.name!r} is unavailable ({self.reason}) "
                "and its dimension is unknown"
            )
        return self._dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Always raises ``EmbedderUnavailable``."""
        raise EmbedderUnavailable(f"embedding model {self.name!r} is unavailable: {self.reason}")

