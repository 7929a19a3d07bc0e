"""The query graph: an ONNX export with a query delta added as gated low-rank branches.

The learned ranking reads the query's token vectors from a tuned copy of the
embedding model (``query_delta.QueryDelta``: ``W + up @ down`` on some linear
layers), while the query's pooled vector must come from the plain model, which
embedded the stored memories. Two models would mean two sessions to build in
every new process and two runs per query. The query graph is one model that
does both: each changed layer computes ``x @ W + gate * ((x @ down.T) @ up.T)``,
with ``gate`` a per-row input, so a batch of two rows (gate 0 and gate 1) gives
the plain encoding and the tuned one in one run. A row with gate 0 adds exact
zeros, so it is the plain model's output.

Building it needs the ``onnx`` package (a second of imports) and is done once
per export and delta: the graph is saved beside the export as
``query-v{FORMAT}-{digest}.onnx``, its unchanged weights read from the
export's ``model.onnx.data`` (memory-mapped by onnxruntime) and the small
low-rank matrices stored inline. The export folder is named after the model's
content, so a changed model gets a new folder and a new graph; the file name
carries the delta's digest, so a changed learned-rank model gets a new graph.
It is written under a temporary name and renamed into place, so concurrent
first runs each see a complete file or none.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .onnx_cache import ONNX_FILE

if TYPE_CHECKING:
    from .query_delta import QueryDelta

# Bump when the graph built here changes meaning (a new file name; old files are pruned).
FORMAT_VERSION = 1
GATE_INPUT = "query_delta_gate"
STALE_TEMP_SECONDS = 3600  # temporary files older than this are from dead processes
# Another delta's graph untouched this long belongs to a learned-rank model no longer in use.
UNUSED_GRAPH_SECONDS = 7 * 86400


def graph_path(export: Path, delta: "QueryDelta") -> Path:
    """Where the query graph for ``delta`` beside the export at ``export`` lives."""
    return export / f"query-v{FORMAT_VERSION}-{delta.digest}.onnx"


def matmul_node_name(layer: str) -> str:
    """The ONNX node of a linear layer's product: torch's exporter names it after the
    module path (``encoder.layer.0.attention.self.query`` ->
    ``/model/encoder/layer.0/attention/self/query/MatMul``)."""
    return "/model/" + re.sub(r"layer\.([0-9]+)", r"layer#\1", layer).replace(".", "/").replace("#", ".") + "/MatMul"


def build_graph(export: Path, delta: "QueryDelta", *, inline_weights: bool = False) -> Any:
    """The query graph (an onnx ModelProto) for the export at ``export``; ValueError when
    ``delta`` does not fit it, ImportError without the onnx package. Its unchanged
    weights stay references to the export's data file unless ``inline_weights``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(export / ONNX_FILE), load_external_data=False)
    graph = model.graph
    if any(i.name == GATE_INPUT for i in graph.input):
        raise ValueError(f"the ONNX export at {export} already has an input named {GATE_INPUT}")
    by_name = {node.name: node for node in graph.node}
    weights = {tensor.name: tensor for tensor in graph.initializer}
    gate = GATE_INPUT + "/3d"
    added: dict[str, list[Any]] = {}  # nodes to add after each changed product, by its name
    for index, layer in enumerate(sorted(delta.layers)):
        node = by_name.get(matmul_node_name(layer))
        weight = weights.get(node.input[1]) if node is not None and len(node.input) > 1 else None
        if node is None or weight is None or len(weight.dims) != 2:
            raise ValueError(f"query delta layer {layer} has no weight in the ONNX export at {export}")
        inputs, outputs = weight.dims  # x @ W: W is inputs x outputs
        delta.check_shape(layer, outputs, inputs)
        down, up = delta.layers[layer]
        prefix = f"query_delta/{index}"
        graph.initializer.extend([
            numpy_helper.from_array(np.ascontiguousarray(down.T, dtype=np.float32), f"{prefix}/down"),
            numpy_helper.from_array(np.ascontiguousarray(up.T, dtype=np.float32), f"{prefix}/up"),
        ])
        product = node.output[0]
        node.output[0] = f"{prefix}/plain"
        added[node.name] = [
            helper.make_node("MatMul", [node.input[0], f"{prefix}/down"], [f"{prefix}/low"], name=f"{prefix}/MatMulDown"),
            helper.make_node("Mul", [f"{prefix}/low", gate], [f"{prefix}/gated"], name=f"{prefix}/Gate"),
            helper.make_node("MatMul", [f"{prefix}/gated", f"{prefix}/up"], [f"{prefix}/change"], name=f"{prefix}/MatMulUp"),
            helper.make_node("Add", [f"{prefix}/plain", f"{prefix}/change"], [product], name=f"{prefix}/Add"),
        ]
    graph.input.append(helper.make_tensor_value_info(GATE_INPUT, TensorProto.FLOAT, ["batch"]))
    graph.initializer.append(numpy_helper.from_array(np.array([1, 2], dtype=np.int64), f"{GATE_INPUT}/axes"))
    # Each new node right after the product it changes keeps the graph's topological order.
    nodes = [helper.make_node("Unsqueeze", [GATE_INPUT, f"{GATE_INPUT}/axes"], [gate], name=f"{GATE_INPUT}/Unsqueeze")]
    for node in graph.node:
        nodes.append(node)
        nodes.extend(added.get(node.name, ()))
    del graph.node[:]
    graph.node.extend(nodes)
    if inline_weights:
        onnx.load_external_data_for_model(model, str(export))
    return model


def saved_graph(export: Path, delta: "QueryDelta") -> tuple[Path | None, bytes | None, str | None]:
    """The query graph for ``delta``: (its file, None, None) when it is saved beside the
    export (built and saved now if it is not); (None, the model's bytes with every
    weight inline, why it could not be saved) when the folder cannot take it.
    ValueError / ImportError as ``build_graph``."""
    path = graph_path(export, delta)
    if path.is_file():
        return path, None, None
    model = build_graph(export, delta)
    temp = export / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        temp.write_bytes(model.SerializeToString())
        os.replace(temp, path)  # atomic: a concurrent reader sees all of it or nothing
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        inline = build_graph(export, delta, inline_weights=True)
        return None, inline.SerializeToString(), f"cannot save the query graph in {export}: {exc}"
    prune(export, keep=path)
    return path, None, None


def discard(path: Path) -> None:
    """Remove a saved query graph that would not load (it is rebuilt on next use)."""
    with contextlib.suppress(OSError):
        path.unlink()


def prune(export: Path, *, keep: Path) -> None:
    """Delete other deltas' query graphs (and their int8 copies) not written for a week,
    older formats' graphs, and temporary files of dead processes."""
    now = time.time()
    try:
        entries = list(os.scandir(export))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        # An int8 copy (embedders/query_int8.py) and its digest go with their graph's age.
        graph = (name.startswith("query-") and name.endswith((".onnx", ".onnx.sha256"))
                 and name != keep.name and not name.startswith(keep.stem + "-int8-"))
        temp = name.startswith(".query-") and name.endswith(".tmp")
        if not (graph or temp) or not entry.is_file(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            age = now - entry.stat(follow_symlinks=False).st_mtime
            old_format = graph and not name.startswith(f"query-v{FORMAT_VERSION}-")
            if old_format or age > (UNUSED_GRAPH_SECONDS if graph else STALE_TEMP_SECONDS):
                os.unlink(entry.path)

