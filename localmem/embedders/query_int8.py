"""The query graph quantised to int8, opt-in with ``LOCALMEM_QUERY_INT8=1``.

onnxruntime's dynamic quantisation stores the query graph's weights as int8
and runs its products as integer products: a query costs well under half of the
float graph's time on a CPU, but its vectors move slightly (the stored memories
keep the float model's), so answers change a little and it is not the default
(docs/results/history.md, branch warm6, has the quality figures).

The quantised graph is made once per query graph and onnxruntime version,
with the ``onnx`` package (``quantize_dynamic``), and saved beside the float
one as ``{graph}-int8-{key}.onnx``; ``key`` covers this module's format and
the onnxruntime version, so an upgrade quantises again. A sidecar
``.sha256`` file holds the graph's digest: the file is hashed when a process
opens it, and a file that does not match (truncated, damaged, half-written by
a process that died) is deleted and made again, never loaded. The session is
built from the very bytes that were hashed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import ConfigError

ENV = "LOCALMEM_QUERY_INT8"
FORMAT_VERSION = 1  # bump when the quantisation's settings change (a new file name)
DIGEST_SUFFIX = ".sha256"


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``$LOCALMEM_QUERY_INT8`` asks for the int8 query graph; ConfigError naming
    it for a value that is not a yes or a no."""
    env = os.environ if environ is None else environ
    text = (env.get(ENV) or "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{ENV} must be 1 or 0, got {env.get(ENV)!r}")


def unavailable_reason() -> str | None:
    """Why quantising cannot run here (None when it can), found without importing onnx or
    onnxruntime (a store opens with this setting without loading either)."""
    specs = {}
    for module in ("onnx", "onnxruntime"):
        specs[module] = importlib.util.find_spec(module)
        if specs[module] is None:
            return (f"{ENV}=1 needs the {module} package to quantise the query graph "
                    "(pip install 'localmem[onnx]')")
    folders = specs["onnxruntime"].submodule_search_locations or ()
    if not any(os.path.isdir(os.path.join(folder, "quantization")) for folder in folders):
        return f"{ENV}=1 needs onnxruntime.quantization, missing from this onnxruntime build"
    return None


def int8_path(graph: Path) -> Path:
    """Where the int8 copy of the float query graph at ``graph`` lives."""
    version = importlib.metadata.version("onnxruntime")
    key = hashlib.sha256(f"int8:{FORMAT_VERSION}:onnxruntime-{version}".encode()).hexdigest()[:12]
    return graph.with_name(f"{graph.stem}-int8-{key}.onnx")


def _digest_file(path: Path) -> Path:
    return path.with_name(path.name + DIGEST_SUFFIX)


def verified_bytes(path: Path) -> bytes | None:
    """The int8 graph's bytes when its digest matches its sidecar; None when it is missing
    or does not match (the damaged file and its sidecar are then deleted)."""
    try:
        expected = _digest_file(path).read_text(encoding="ascii").strip()
        data = path.read_bytes()
    except (OSError, UnicodeDecodeError):
        data, expected = b"", ""
    if expected and hashlib.sha256(data).hexdigest() == expected:
        return data
    discard(path)
    return None


def discard(path: Path) -> None:
    """Delete an int8 graph and its sidecar (it is made again on next use)."""
    for victim in (path, _digest_file(path)):
        with contextlib.suppress(OSError):
            victim.unlink()


def quantise(graph: Path | bytes, target: Path | None) -> bytes:
    """Quantise the float query graph (a file, or its bytes with every weight inline) and
    return the int8 graph's bytes; saved at ``target`` with its digest when given and the
    folder takes it. Needs the onnx package (ImportError without it)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="localmem-int8-") as scratch:
        source = graph if isinstance(graph, Path) else Path(scratch) / "query.onnx"
        if isinstance(graph, bytes):
            source.write_bytes(graph)
        out = Path(scratch) / "int8.onnx"
        # Per-channel scales keep the query vector within a cosine of ~0.995 of the float
        # graph's (~0.971 with one scale per matrix), at the same speed. The delta's
        # low-rank products stay float: they are tiny, and the gate that zeroes them on
        # the plain row must multiply exact values.
        with _quiet_quantiser():
            quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8, per_channel=True,
                             nodes_to_exclude=_delta_nodes(source))
        data = out.read_bytes()
    if target is not None:
        _save(data, target)
    return data


class _FromQuantiser(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "quantization" not in record.pathname


@contextlib.contextmanager
def _quiet_quantiser() -> Iterator[None]:
    """Keep the quantiser's advice (logged on the root logger) out of the user's output."""
    root, quiet = logging.getLogger(), _FromQuantiser()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def _delta_nodes(source: Path) -> list[str]:
    import onnx

    model = onnx.load(str(source), load_external_data=False)
    return [node.name for node in model.graph.node if node.name.startswith("query_delta/")]


def _save(data: bytes, target: Path) -> None:
    """Write the graph and then its digest, each under a temporary name renamed into place:
    a reader sees a digest only once the graph it names is complete."""
    stamp = f"{os.getpid()}.{time.monotonic_ns()}"
    pairs = ((target, data), (_digest_file(target), hashlib.sha256(data).hexdigest().encode("ascii")))
    for path, content in pairs:
        temp = path.with_name(f".{path.name}.{stamp}.tmp")
        try:
            temp.write_bytes(content)
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink()
            return  # not saved: made again by the next process
    # Copies made for another onnxruntime version or format are of no further use.
    prefix = target.name.split("-int8-")[0] + "-int8-"
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            if entry.name.startswith(prefix) and not entry.name.startswith(target.name):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
