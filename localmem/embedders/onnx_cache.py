"""The cache of ONNX exports: where they live, how one is named, found, published and pruned.

An export lives in ``$LOCALMEM_CACHE_DIR`` (else ``$XDG_CACHE_HOME/localmem``,
else ``~/.cache/localmem``) under ``onnx/``, in a folder named after the
model and a key of the model folder's state. It is written elsewhere and
renamed into place, so a reader sees a complete export or none.

Environment: ``LOCALMEM_ONNX=0`` never uses or makes exports;
``LOCALMEM_ONNX_EXPORT=0`` keeps using existing exports but makes no new one
automatically.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..paths import make_folders
from .base import EmbedderUnavailable
from .model_files import installed, read_json
from .st_pipeline import model_folder, read_pipeline

FORMAT_VERSION = 2  # bump when the export's graph, files or meta change meaning
ONNX_FILE = "model.onnx"
DATA_FILE = "model.onnx.data"  # the weights, stored beside the graph: onnxruntime maps them, not parses them
META_FILE = "export.json"
DIGESTS_FILE = "digests.json"  # weights digests by file state (see weights_digest)
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
    return all(installed(module) for module in RUNTIME_REQUIREMENTS)


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


def onnx_root(environ: Mapping[str, str] | None = None) -> Path:
    return cache_root(environ) / "onnx"


# -- the model folder's pipeline ------------------------------------------------




def model_key(folder: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> str:
    """A hex digest naming one state of a model, wherever its folder lives.

    Covers the export format, the ONNX Runtime major version, the content of
    the folder's configuration and tokenizer files and the content of its
    weights, but not the folder's path: the same model installed in two
    virtual environments shares one export. The weights' digest is computed
    once per file state and remembered (``weights_digest``).
    """
    folder = Path(folder)
    digest = hashlib.sha256()
    digest.update(f"localmem-onnx:{FORMAT_VERSION}:onnxruntime-{_runtime_major()}\0".encode())
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
    weights = [e for e in entries if e.name.endswith(_WEIGHT_SUFFIXES) and e.is_file()]
    if not weights:
        raise EmbedderUnavailable(f"model folder {str(folder)!r} has no weights file")
    for entry in weights:
        digest.update(f"{entry.name}\0{weights_digest(Path(entry.path), environ=environ)}\0".encode())
    return digest.hexdigest()


def _runtime_major() -> str:
    """ONNX Runtime's major version ("none" when it is not installed), read without importing it."""
    try:
        return importlib.metadata.version("onnxruntime").split(".")[0]
    except importlib.metadata.PackageNotFoundError:
        return "none"


def weights_digest(path: Path, *, environ: Mapping[str, str] | None = None) -> str:
    """The SHA-256 of a weights file, hashed once per (real path, size, mtime) and remembered.

    Hashing 90 MB costs a few tenths of a second, too much for every cold
    start; the digests are kept in ``onnx/digests.json`` in the cache.
    """
    stat = path.stat()
    identity = f"{os.path.realpath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}"
    book = onnx_root(environ) / DIGESTS_FILE
    known = read_json(book)
    known = known if isinstance(known, dict) else {}
    if isinstance(known.get(identity), str):
        return known[identity]
    sha = hashlib.sha256()
    with open(path, "rb") as fp:
        for block in iter(lambda: fp.read(1 << 20), b""):
            sha.update(block)
    value = sha.hexdigest()
    known[identity] = value
    with contextlib.suppress(OSError):  # a cache: failing to remember only costs a re-hash
        make_folders(book.parent)
        temp = book.with_name(f".{book.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(known, indent=0), encoding="utf-8")
        os.replace(temp, book)
    return value


def _slug(model: str) -> str:
    text = model.strip().rstrip("/\\")
    text = re.split(r"[/\\]", text)[-1] or "model"
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-") or "model"
    return text[-64:]


def export_name(model: str, key: str) -> str:
    """The cache folder name of one state (``key``) of ``model``."""
    return f"{_slug(model)}-{key[:20]}"


def export_dir(model: str, *, environ: Mapping[str, str] | None = None) -> Path:
    """Where the export of ``model`` (in its current state) lives or would live."""
    folder = model_folder(model)
    return onnx_root(environ) / export_name(model, model_key(folder, environ=environ))


def valid_export(target: Path, key: str | None = None) -> dict[str, Any] | None:
    meta = read_json(target / META_FILE)
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
        key = model_key(folder, environ=environ)
    except EmbedderUnavailable:
        return None
    target = onnx_root(environ) / export_name(model, key)
    return target if valid_export(target, key) is not None else None


# -- the embedder ---------------------------------------------------------------


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool) -> Iterator[bool]:
    """An exclusive advisory lock on ``path`` (flock); yields False when busy and not waiting.

    Without fcntl (Windows) it yields True at once: two exports may then run
    together, and the atomic publish keeps one.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield True
        return
    make_folders(path.parent)
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


def publish(temp: Path, target: Path, *, replace: bool = False) -> bool:
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


def clean_stale(root: Path) -> None:
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


def prune_superseded(root: Path, target: Path, folder: Path) -> None:
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
        meta = read_json(Path(entry.path) / META_FILE)
        if isinstance(meta, dict) and meta.get("folder") == str(folder):
            shutil.rmtree(entry.path, ignore_errors=True)
            for suffix in (".lock", ".failed"):
                with contextlib.suppress(OSError):
                    (root / f"{entry.name}{suffix}").unlink()


def status(model: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the cache holds for ``model``: paths, key, pipeline, export metadata, runtime presence."""
    info: dict[str, Any] = {
        "model": model.strip(),
        "cache": str(onnx_root(environ)),
        "onnx_enabled": onnx_enabled(environ),
        "runtime": {m: installed(m) for m in RUNTIME_REQUIREMENTS},
        "exporter": {m: installed(m) for m in EXPORT_REQUIREMENTS},
    }
    try:
        folder = model_folder(model)
        info["folder"] = str(folder)
        key = model_key(folder, environ=environ)
        target = onnx_root(environ) / export_name(model, key)
        info["path"] = str(target)
        info["pipeline"] = asdict(read_pipeline(folder))
    except EmbedderUnavailable as ex:
        info["error"] = ex.message
        return info
    meta = valid_export(target, key)
    info["exported"] = meta is not None
    if meta is not None:
        info["export"] = {
            k: meta.get(k) for k in ("created", "verify_min_cosine", "onnx_bytes", "data_bytes", "versions")
        }
    failed = read_json(target.with_name(f"{target.name}.failed"))
    if isinstance(failed, dict):
        info["last_auto_export_error"] = failed.get("error")
    return info
