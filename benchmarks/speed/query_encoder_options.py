"""The query encoder's own cost under session options and int8 quantisation, paired in one process.

The query graph of the packaged learned-rank model's delta (embedders/query_graph.py) is
opened once per variant, and the same LoCoMo questions are run through every variant in
turn, question by question (two rows, plain and tuned, as recall runs them). Reports each
variant's p50, the median over questions of its time ÷ the shipped session's, and how far
its outputs are from the shipped session's: the largest difference for session options
(which should change nothing), and for int8 the pooled vector's mean and smallest cosine to
the float graph's and the tuned token vectors' mean cosine. Also times making a session
from the graph (optimised at load) against from an optimised copy saved beforehand.
Everything it writes (the saved optimised copy, the quantised graphs) is in a temporary
folder; it needs the ONNX export of the default model and, for int8, the onnx package.

    python benchmarks/speed/query_encoder_options.py [--questions 300] [--every 5] [--partial]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402

from benchmarks.quality.locomo import DEFAULT_DATA  # noqa: E402
from localmem.embedders import query_graph  # noqa: E402
from localmem.embedders.onnx_cache import DATA_FILE  # noqa: E402
from localmem.embedders.onnx_runtime import OnnxEmbedder  # noqa: E402
from localmem.recall import learned_rank  # noqa: E402


def session(model: str | bytes, *, level: str = "ORT_ENABLE_ALL", threads: int = 2, parallel: bool = False,
            arena: bool = True, pattern: bool = True, entries: tuple[tuple[str, str], ...] = (),
            save: str | None = None) -> Any:
    """An inference session as OnnxEmbedder makes the query graph's, with one option changed."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    if parallel:
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        options.inter_op_num_threads = 2
    options.enable_cpu_mem_arena = arena
    options.enable_mem_pattern = pattern
    for key, value in entries:
        options.add_session_config_entry(key, value)
    if save:
        options.optimized_model_filepath = save
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def quantised(source: Path, folder: Path, name: str, nodes: list[str] | None, per_channel: bool = True) -> bytes:
    """The query graph quantised to int8 (``nodes``: only these products; None: every one
    but the delta's, as embedders/query_int8.py does)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False).graph
    delta = [n.name for n in graph.node if n.name.startswith("query_delta/")]
    out = folder / f"{name}.onnx"
    quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8, per_channel=per_channel,
                     nodes_to_exclude=delta if nodes is None else [], nodes_to_quantize=nodes or [])
    data = out.read_bytes()
    out.unlink()
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--every", type=int, default=5, help="take every Nth LoCoMo question")
    parser.add_argument("--partial", action="store_true", help="also int8 on some of the products only")
    parser.add_argument("--no-int8", action="store_true", help="session options only (no onnx package needed)")
    args = parser.parse_args(argv)

    delta = learned_rank.TreeModel.packaged().query_delta
    embedder = OnnxEmbedder()
    embedder.load()
    shipped = embedder._query_session(delta)
    source = query_graph.graph_path(embedder.export_path, delta)
    conversations = json.loads(Path(args.data).read_text())
    questions = [qa["question"] for c in conversations for qa in c.get("qa", [])][::args.every][:args.questions]

    def run(s: Any, question: str) -> tuple[Any, Any]:
        vectors, tokens = embedder._checked_run([question, question], True, s, gates=(0.0, 1.0))
        return vectors[0], tokens[1]

    with tempfile.TemporaryDirectory(prefix="query-encoder-options-") as scratch:
        folder = Path(scratch)
        # An optimised copy refers to the export's weights by a path beside it, which
        # onnxruntime will not follow out of its folder (a symlink), and onnx refuses a
        # hard-linked data file: a copy.
        shutil.copyfile(embedder.export_path / DATA_FILE, folder / DATA_FILE)
        optimised = str(folder / "optimised.onnx")
        session(str(source), save=optimised)
        made: dict[str, list[float]] = {"optimised at load": [], "from the saved optimised copy": []}
        for _ in range(5):
            for label, make in (("optimised at load", lambda: session(str(source))),
                                ("from the saved optimised copy",
                                 lambda: session(optimised, level="ORT_DISABLE_ALL"))):
                started = time.perf_counter()
                make()
                made[label].append((time.perf_counter() - started) * 1000)
        print(f"{len(questions)} LoCoMo questions, two rows each; load average {os.getloadavg()[0]:.1f}")
        print("making the query graph's session, median of 5: "
              + ", ".join(f"{label} {statistics.median(v):.0f} ms" for label, v in made.items()) + "\n")

        variants: dict[str, Callable[[], Any]] = {
            "shipped (ALL, two intra-op threads)": lambda: shipped,
            "ORT_ENABLE_EXTENDED": lambda: session(str(source), level="ORT_ENABLE_EXTENDED"),
            "memory arena and pattern off": lambda: session(str(source), arena=False, pattern=False),
            "one intra-op thread": lambda: session(str(source), threads=1),
            "ORT_PARALLEL, two inter-op threads": lambda: session(str(source), parallel=True),
            "session.disable_prepacking": lambda: session(str(source), entries=(("session.disable_prepacking", "1"),)),
            "the saved optimised copy": lambda: session(optimised, level="ORT_DISABLE_ALL"),
        }
        if not args.no_int8:
            int8 = quantised(source, folder, "int8", None)
            variants["int8, per channel (LOCALMEM_QUERY_INT8)"] = lambda: session(int8)
            variants["int8, per channel, one thread"] = lambda: session(int8, threads=1)
            per_matrix = quantised(source, folder, "per-matrix", None, per_channel=False)
            variants["int8, one scale per matrix"] = lambda: session(per_matrix)
        if args.partial and not args.no_int8:
            import onnx

            products = [n.name for n in onnx.load(str(source), load_external_data=False).graph.node
                        if n.op_type == "MatMul" and not n.name.startswith("query_delta/")]
            subsets = {
                "feed-forward only": [n for n in products if "/intermediate/" in n
                                      or ("/output/dense" in n and "/attention/" not in n)],
                "attention projections only": [n for n in products if "/attention/" in n and (
                    "/output/dense" in n or n.endswith(("query/MatMul", "key/MatMul", "value/MatMul")))],
                "every layer but the last": [n for n in products if "layer.5/" not in n],
            }
            for label, chosen in subsets.items():
                data = quantised(source, folder, label.replace(" ", "-"), chosen)
                variants[f"int8, {label} ({len(chosen)} products)"] = lambda data=data: session(data)
        sessions = {label: make() for label, make in variants.items()}

    times: dict[str, list[float]] = {label: [] for label in sessions}
    outputs: dict[str, list[tuple[Any, Any]]] = {label: [] for label in sessions}
    for question in questions:
        for label, s in sessions.items():
            started = time.perf_counter()
            outputs[label].append(run(s, question))
            times[label].append((time.perf_counter() - started) * 1000)
    base_label = next(iter(sessions))
    base = np.array(times[base_label])
    print("| variant | p50 ms | median ÷ shipped | largest difference | vector cosine mean / min | tuned tokens' cosine |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in sessions:
        pairs = list(zip(outputs[label], outputs[base_label]))
        largest = max(max(float(np.abs(v - w).max()), float(np.abs(t - u).max())) for (v, t), (w, u) in pairs)
        cosines = [float(np.dot(v, w)) for (v, _), (w, _) in pairs]
        tokens = [float(np.mean(np.sum(t * u, 1) / np.linalg.norm(t, axis=1) / np.linalg.norm(u, axis=1)))
                  for (_, t), (_, u) in pairs]
        print(f"| {label} | {statistics.median(times[label]):.2f} | {np.median(np.array(times[label]) / base):.3f} | "
              f"{largest:.1e} | {np.mean(cosines):.4f} / {np.min(cosines):.4f} | {np.mean(tokens):.4f} |")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
