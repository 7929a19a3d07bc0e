"""The embedder command: export the model to ONNX once, or show the cached export."""

from __future__ import annotations

import argparse
import sys

from ..settings import choose_embedder
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path
from .output import Output


def register(command: AddCommand) -> None:
    """embedder export|status."""
    p = command("embedder", cmd_embedder,
                "export the embedding model to ONNX once (a torch-free, fast cold start), or show its status",
                epilog="The export needs torch, sentence-transformers and onnx; using it needs the 'onnx' "
                       "extra (onnxruntime, tokenizers). It is cached in $LOCALMEM_CACHE_DIR, else "
                       "$XDG_CACHE_HOME/localmem or ~/.cache/localmem.")
    p.add_argument("action", choices=("export", "status"), help="export, or status of the cached export")
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help="model name or path (default: the database's embedder, else $LOCALMEM_MODEL "
                        "or all-MiniLM-L6-v2)")
    p.add_argument("--force", action="store_true", help="export again even when a current export is cached")


def cmd_embedder(args: argparse.Namespace, out: Output) -> int:
    from ..embedders import model_for_spec
    from ..embedders.onnx_cache import status
    from ..embedders.onnx_export import export_model

    model = args.model or model_for_spec(choose_embedder(getattr(args, "embedder", None), db_path(args)))
    if args.action == "status":
        info = status(model)
        if out.as_json:
            out.json(info)
        else:
            for key in ("model", "folder", "path", "exported", "error", "last_auto_export_error"):
                if info.get(key) is not None:
                    out.line(f"{key:<9}  {info[key]}")
            missing = [m for m, ok in info["runtime"].items() if not ok]
            out.line(f"runtime    {'missing ' + ', '.join(missing) if missing else 'ok'}")
            if info.get("export"):
                export = info["export"]
                out.line(f"created    {export['created']} (min cosine vs sentence-transformers "
                         f"{export['verify_min_cosine']:.6f})")
        return EXIT_OK if info.get("exported") else EXIT_ERROR
    report = export_model(model, force=args.force)
    report["query_graph"] = _query_graph(model, report["path"])
    if out.as_json:
        out.json(report)
    elif report["status"] == "cached":
        out.line(f"already exported: {report['path']}")
    else:
        out.line(f"exported {report['model']} to {report['path']} in {report['seconds']:.1f} s "
                 f"(min cosine vs sentence-transformers {report['verify_min_cosine']:.6f})")
    if report["query_graph"] and not out.as_json:
        out.line(f"query graph for the learned ranking: {report['query_graph']}")
    return EXIT_OK


def _query_graph(model: str, export: str) -> str | None:
    """Build now the query graph the packaged learned-rank model's delta needs with this
    model (embedders/query_graph.py), so no recall pays for it; None when that model does
    not rank this one's vectors."""
    from pathlib import Path

    from ..embedders.query_graph import saved_graph
    from ..recall.learned_rank import TreeModel

    learned = TreeModel.packaged()
    if learned.query_delta is None or model.strip() not in learned.embedders:
        return None
    path, _inline, why = saved_graph(Path(export), learned.query_delta)
    if why is not None:
        print(f"localmem: {why}; each process will build it in memory", file=sys.stderr)
    return str(path) if path is not None else None
