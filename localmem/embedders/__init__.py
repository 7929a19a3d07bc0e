"""Embedders: turn texts into vectors for the vector channel.

An embedder is any object with a ``name``, a ``dimensions`` count and an
``embed(texts)`` method returning one list of floats per text. Built in:

- ``HashEmbedder`` (``hashing``): deterministic feature hashing, stdlib only.
  Semantically meaningless but stable; for tests and fixtures.
- ``SentenceTransformerEmbedder`` (``sentence_transformer``): a
  sentence-transformers model, imported and loaded lazily on first use.
- ``OnnxEmbedder`` (``onnx_runtime``): the same model run by ONNX Runtime from
  a cached export (``onnx_cache``, made by ``onnx_export``), without torch —
  the fast cold path of the ``onnx`` extra.
- ``UnavailableEmbedder`` (``base``): stands in for a model that cannot be
  loaded, so a store can still open (without vectors) and say it is degraded.

Each built-in embedder is also a ``TokenEmbedder`` (``base``): its
``embed_with_tokens(texts)`` returns the token vectors of each text beside
the pooled one, for the late-interaction evidence of recall.

``resolve_embedder()`` (``resolve``) turns the ``embedder=`` argument of
``MemoryStore`` into one of these. Callers that embed catch
``EmbedderUnavailable``. Importing this package imports no torch, numpy or
onnxruntime.
"""

from .base import (Embedder, EmbedderUnavailable, OnnxExportError, TokenEmbedder, UnavailableEmbedder,
                   embed_batch, gives_token_vectors)
from .hashing import HashEmbedder
from .model_files import DEFAULT_MODEL, known_dimensions
from .onnx_runtime import OnnxEmbedder
from .resolve import model_for_spec, resolve_embedder, spec_for_recorded_name
from .sentence_transformer import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbedderUnavailable",
    "HashEmbedder",
    "OnnxEmbedder",
    "OnnxExportError",
    "SentenceTransformerEmbedder",
    "TokenEmbedder",
    "UnavailableEmbedder",
    "embed_batch",
    "gives_token_vectors",
    "known_dimensions",
    "model_for_spec",
    "resolve_embedder",
    "spec_for_recorded_name",
]
