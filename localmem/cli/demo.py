"""The demo command: a sample memory set in a temporary database, and example recalls."""

from __future__ import annotations

import argparse
import os
import tempfile

from ..errors import LocalMemError
from ..text import plural
from .common import EXIT_OK, AddCommand, open_store
from .output import Output


def register(command: AddCommand) -> None:
    """demo."""
    command("demo", cmd_demo, "store a sample memory set in a temporary database and run example recalls")


def cmd_demo(args: argparse.Namespace, out: Output) -> int:
    from ..demo import run_demo

    explicit = getattr(args, "db", None)
    with tempfile.TemporaryDirectory(prefix="localmem-demo-") as folder:
        path = explicit or os.path.join(folder, "demo.db")
        with open_store(args, path=path) as store:
            existing = store.health()["memory_count"]
            if existing:
                raise LocalMemError(f"the demo needs an empty database; {path} already has "
                                    f"{plural(existing, 'memory', 'memories')}")
            embedder = store.embedder.name if store.embedder is not None else "none"
            if not out.as_json:
                where = path if explicit else f"{path} (temporary; --db PATH keeps it)"
                out.lines(out.wrap(f"localmem demo - database {where}, embedder {embedder}"))
            result = run_demo(store, out=out.line, as_json=out.as_json, width=out.width)
            if out.as_json:
                out.json({"status": "success", "path": path, "embedder": embedder,
                          "embedder_error": store.embedder_error, **result})
            elif result["degraded"]:
                out.line("")
                out.lines(out.wrap("The embedding model was unavailable, so this ran degraded "
                                   "(no vector channel)."))
    return EXIT_OK
