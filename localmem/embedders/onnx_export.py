"""Exporting a sentence-transformers model to ONNX, once, checked against the original.

``export_model()`` exports the model's transformer with ``torch.onnx`` (so
only where torch, sentence-transformers and onnx are installed), moves the
weights into a file beside the graph (onnxruntime maps it rather than parsing
it), checks the export against sentence-transformers on a fixed set of texts
(same token ids, cosine >= 0.9999), and publishes it atomically into the
cache. Concurrent exporters queue on a lock file; exports of earlier states
of the same folder are deleted. ``auto_export()`` runs it quietly after a
sentence-transformers load, so the next process takes the fast path.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..paths import make_folders
from .base import EmbedderUnavailable, OnnxExportError
from .model_files import DEFAULT_MODEL, installed
from .onnx_cache import (
    DATA_FILE,
    EXPORT_REQUIREMENTS,
    FORMAT_VERSION,
    META_FILE,
    ONNX_FILE,
    RUNTIME_REQUIREMENTS,
    auto_export_enabled,
    clean_stale,
    export_name,
    file_lock,
    model_key,
    onnx_root,
    prune_superseded,
    publish,
    valid_export,
)
from .onnx_runtime import OnnxEmbedder
from .st_pipeline import MODULE_ORDER, Pipeline, model_folder, read_pipeline

log = logging.getLogger("localmem.onnx")

OPSET = 17
VERIFY_MIN_COSINE = 0.9999  # an export that agrees less than this with sentence-transformers is refused


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

# flock is per open file: threads of one process also queue here.
_process_lock = threading.Lock()


def _load_st_model(folder: Path) -> Any:
    """sentence-transformers' model for a local folder, offline (the reference for the export)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(folder), device="cpu")
    except Exception as ex:  # ImportError, OSError, torch errors...
        raise EmbedderUnavailable(
            f"cannot load embedding model from {str(folder)!r}: {type(ex).__name__}: {ex}") from ex


class _Steps:
    """Says each step of an export as it starts (``localmem.onnx`` log, INFO), with how long the
    export has run so far, worded as such (a bare ``(12.3 s)`` read as the step's duration)."""

    def __init__(self, model: str, started: float) -> None:
        self.model = model.strip()
        self.started = started
        self.number = 0

    def __call__(self, what: str) -> None:
        self.number += 1
        log.info("  %d. %s (at %.0f s)", self.number, what, time.perf_counter() - self.started)


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
    if kinds not in (list(MODULE_ORDER), list(MODULE_ORDER[:2])):
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
    key = model_key(folder, environ=environ)
    root = onnx_root(environ)
    target = root / export_name(model, key)
    report: dict[str, Any] = {"model": model.strip(), "folder": str(folder), "path": str(target)}
    if not force and valid_export(target, key) is not None:
        return {**report, "status": "cached"}
    missing = [m for m in EXPORT_REQUIREMENTS + RUNTIME_REQUIREMENTS if not installed(m)]
    if missing:
        raise OnnxExportError(
            f"exporting to ONNX needs {', '.join(missing)} "
            "(pip install 'localmem[embeddings,onnx]')"
        )
    make_folders(root)
    lock_path = root / f"{target.name}.lock"
    acquired = _process_lock.acquire(blocking=wait)
    if not acquired:
        return {**report, "status": "busy"}
    try:
        with file_lock(lock_path, wait=wait) as locked:
            if not locked:
                return {**report, "status": "busy"}
            if not force and valid_export(target, key) is not None:
                return {**report, "status": "cached"}  # another process finished it while we waited
            clean_stale(root)
            started = time.perf_counter()
            step = _Steps(model, started)
            log.info("exporting %s to ONNX once, for a fast start from now on (usually 15 s to a minute, "
                     "longer on a busy machine; LOCALMEM_ONNX_EXPORT=0 turns this off)", model.strip())
            if st_model is None:
                step("loading it with sentence-transformers")
                st_model = _load_st_model(folder)
            auto_model = _check_st_model(st_model, pipeline)
            temp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=root))
            try:
                os.chmod(temp, 0o755)  # mkdtemp makes it private; the cache is readable like its files
                step("tracing the transformer into an ONNX graph")
                inputs = _torch_export(st_model, auto_model, temp / ONNX_FILE)
                step("moving the weights beside the graph")
                _externalize(temp / ONNX_FILE)
                exported = time.perf_counter()
                step(f"checking it against sentence-transformers on {len(verify_texts)} texts")
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
                published = publish(temp, target, replace=force)
            except BaseException:
                shutil.rmtree(temp, ignore_errors=True)
                raise
            seconds = time.perf_counter() - started
            if published:
                prune_superseded(root, target, folder)
                log.info("exported %s to ONNX in %.1f s (min cosine %.6f): %s",
                         model.strip(), seconds, worst, target)
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
    if not auto_export_enabled():
        return None
    if not all(installed(m) for m in EXPORT_REQUIREMENTS + RUNTIME_REQUIREMENTS):
        return None
    try:
        folder = model_folder(model)
        key = model_key(folder)
    except EmbedderUnavailable:
        return None
    root = onnx_root()
    target = root / export_name(model, key)
    if valid_export(target, key) is not None or (root / f"{target.name}.failed").exists():
        return None
    try:
        report = export_model(model, st_model=st_model, wait=False)
    except Exception as ex:
        log.warning("ONNX export of %r failed, sentence-transformers stays in use: %s", model, ex)
        with contextlib.suppress(OSError):
            make_folders(root)
            (root / f"{target.name}.failed").write_text(
                json.dumps({"model": model, "key": key, "error": f"{type(ex).__name__}: {ex}"}) + "\n",
                encoding="utf-8",
            )
        return None
    return report

