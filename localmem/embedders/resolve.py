"""``resolve_embedder``: the ``embedder=`` argument of ``MemoryStore`` made into an embedder."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from . import query_int8
from .base import Embedder, UnavailableEmbedder
from .hashing import HashEmbedder
from .model_files import DEFAULT_MODEL, installed
from .onnx_cache import find_export, onnx_enabled, runtime_available
from .onnx_runtime import OnnxEmbedder
from .sentence_transformer import SentenceTransformerEmbedder


def spec_for_recorded_name(name: str) -> str:
    """The ``embedder=`` argument that recreates an embedder name a database recorded
    (``hash-64`` is ``hash:64``; a model's name is itself)."""
    match = re.fullmatch(r"hash-([0-9]+)", name)
    return f"hash:{match.group(1)}" if match else name


def resolve_embedder(spec: Any, *, environ: Mapping[str, str] | None = None) -> Embedder | None:
    """Turn an ``embedder=`` argument into an embedder, or None for no vectors.

    ``$LOCALMEM_QUERY_INT8`` is read for every string: a value that is not a yes or a no
    is refused (ConfigError naming it), and a yes for an embedder without the ONNX query
    graph (hash, sentence-transformers, none) is said in a warning: it changes nothing there.

    ``"none"``/None: no vector channel. ``"hash"`` or ``"hash:N"``: a
    ``HashEmbedder``. ``"auto"``: ``$LOCALMEM_MODEL`` or all-MiniLM-L6-v2, or an
    ``UnavailableEmbedder`` when neither sentence-transformers nor an ONNX
    export can run it. Any other string: a model name or local path.

    A model (from ``"auto"`` or by name) runs as an ``OnnxEmbedder`` when
    onnxruntime is installed and the cache holds an export of it (see
    ``onnx_runtime``; ``$LOCALMEM_ONNX=0`` turns this off), else as
    a ``SentenceTransformerEmbedder``; both give the same vectors under the
    same name. ``"onnx:MODEL"`` forces the ONNX embedder, ``"st:MODEL"``
    sentence-transformers (the reference). Objects with ``name``,
    ``dimensions`` and ``embed`` are returned as they are.
    """
    embedder = _resolve(spec, environ)
    if isinstance(spec, str) and query_int8.wanted(environ) and not getattr(embedder, "query_int8", False):
        used = "no" if embedder is None else f"the {type(embedder).__name__}"
        warnings.warn(f"{query_int8.ENV}=1 changes nothing with {used} embedder: only the ONNX embedder's "
                      "query graph has an int8 copy (docs/embedders.md)", stacklevel=2)
    return embedder


def _resolve(spec: Any, environ: Mapping[str, str] | None) -> Embedder | None:
    if spec is None:
        return None
    if isinstance(spec, str):
        text = spec.strip()
        lowered = text.lower()
        if not text:
            raise ConfigError("embedder must not be an empty string")
        if lowered == "none":
            return None
        if lowered == "hash":
            return HashEmbedder()
        if lowered.startswith("hash:"):
            raw = text[5:].strip()
            if not re.fullmatch(r"[0-9]+", raw):
                raise ConfigError(f"bad embedder {spec!r}: expected 'hash:N' with N an integer")
            return HashEmbedder(int(raw))
        if lowered == "auto":
            env = os.environ if environ is None else environ
            model = (env.get("LOCALMEM_MODEL") or "").strip() or DEFAULT_MODEL
            fast = _onnx_embedder(model)
            if fast is not None:
                return fast
            missing = [m for m in ("sentence_transformers", "torch") if not installed(m)]
            if missing:
                return UnavailableEmbedder(model, f"{' and '.join(missing)} not installed")
            return SentenceTransformerEmbedder(model)
        prefix, sep, rest = text.partition(":")
        if sep and prefix.strip().lower() in ("onnx", "st", "sentence-transformers"):
            rest = rest.strip()
            if not rest:
                raise ConfigError(f"bad embedder {spec!r}: expected '{prefix.strip()}:MODEL'")
            if prefix.strip().lower() == "onnx":
                return OnnxEmbedder(rest)
            return SentenceTransformerEmbedder(rest)
        return _onnx_embedder(text) or SentenceTransformerEmbedder(text)
    if isinstance(spec, (HashEmbedder, SentenceTransformerEmbedder, UnavailableEmbedder)):
        return spec
    problems = []
    name = getattr(spec, "name", None)
    if not isinstance(name, str) or not name:
        problems.append("name (a non-empty str)")
    dimensions = getattr(spec, "dimensions", None)
    if not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 1:
        problems.append("dimensions (a positive int)")
    if not callable(getattr(spec, "embed", None)):
        problems.append("embed(texts) method")
    if problems:
        raise ConfigError(
            f"embedder {type(spec).__name__} object is missing or has a bad "
            f"{', '.join(problems)}; expected 'auto', 'hash', 'none', a model name "
            "or path, or an object with name, dimensions and embed"
        )
    return spec


def _onnx_embedder(model: str) -> Embedder | None:
    """An ``OnnxEmbedder`` for ``model`` when onnxruntime is installed and an export is cached."""
    if not installed("onnxruntime") or not onnx_enabled():
        return None
    if not runtime_available() or find_export(model) is None:
        return None
    return OnnxEmbedder(model, fallback=lambda: SentenceTransformerEmbedder(model))



def model_for_spec(spec: str, *, environ: Mapping[str, str] | None = None) -> str:
    """The model an ``embedder=`` string names: ``auto`` is ``$LOCALMEM_MODEL`` or the default."""
    text = (spec or "").strip()
    lowered = text.lower()
    if lowered == "auto" or not text:
        env = os.environ if environ is None else environ
        return (env.get("LOCALMEM_MODEL") or "").strip() or DEFAULT_MODEL
    if lowered in ("none", "hash") or lowered.startswith("hash:") or re.fullmatch(r"hash-[0-9]+", lowered):
        raise ConfigError(f"embedder {text!r} has no model to export")
    prefix, sep, rest = text.partition(":")
    if sep and prefix.strip().lower() in ("onnx", "st", "sentence-transformers") and rest.strip():
        return rest.strip()
    return text

