"""The argument parser: global options, accepted before or after the command, and every command."""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from . import demo, edges, embedder, maintenance, memories, recall, servers
from .common import CommandFunc

GROUPS = (memories, edges, recall, maintenance, demo, servers, embedder)


def _global_options() -> argparse.ArgumentParser:
    """--db/--embedder/--json, accepted before or after the command (SUPPRESS keeps either)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("global options")
    group.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                       help="database file (default: $LOCALMEM_DB, else "
                            "$XDG_DATA_HOME/localmem/memory.db or ~/.local/share/localmem/memory.db)")
    group.add_argument("--embedder", metavar="NAME", default=argparse.SUPPRESS,
                       help="auto, hash, hash:N, none, or a sentence-transformers model name or path "
                            "(run through ONNX when exported, see 'embedder export'; onnx:MODEL or "
                            "st:MODEL forces one) (default: $LOCALMEM_EMBEDDER, else the embedder the "
                            "database was made with, else auto)")
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="machine-readable JSON output")
    return parent


def build_parser() -> argparse.ArgumentParser:
    common = _global_options()
    parser = argparse.ArgumentParser(
        prog="localmem", parents=[common],
        description="A memory store for AI assistants in one SQLite file (AutoMem-compatible).",
        epilog="Exit codes: 0 success, 2 bad usage or invalid input, 1 other errors.")
    parser.add_argument("--version", action="version", version=f"localmem {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, func: CommandFunc, help_text: str,
                **kwargs: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help_text, description=help_text, **kwargs)
        sub.set_defaults(func=func)
        return sub

    for group in GROUPS:
        group.register(command)
    return parser
