"""The argument parser: global options, accepted before or after the command, and every command.

The global options are described once, in ``localmem --help``; each
command's help shows its own options and a one-line pointer to them.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any

from .. import __version__
from . import (browse, daemon, demo, edges, embedder, hooks, maintenance, memories, privacy, pull, push, recall,
               reembed, servers, shell, sync, trash, ui)
from .common import CommandFunc
from .output import COLOR_CHOICES

GROUPS = (memories, edges, browse, recall, maintenance, privacy, push, pull, sync, trash, reembed, demo, servers,
          daemon, ui, hooks, embedder, shell)
GLOBAL_POINTER = "Global options (--db, --embedder, --json, --color): see 'localmem --help'."


def _global_options(described: bool) -> argparse.ArgumentParser:
    """--db/--embedder/--json/--color, accepted before or after the command (SUPPRESS keeps either).

    ``described`` is False for the copy every command carries: it parses the
    same options but leaves them out of the command's help.
    """
    def text(help_text: str) -> str:
        return help_text if described else argparse.SUPPRESS

    parent = argparse.ArgumentParser(add_help=False)
    group = (parent.add_argument_group("global options", "accepted before or after the command")
             if described else parent)
    group.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                       help=text("database file (default: $LOCALMEM_DB, else "
                                 "$XDG_DATA_HOME/localmem/memory.db or ~/.local/share/localmem/memory.db)"))
    group.add_argument("--embedder", metavar="NAME", default=argparse.SUPPRESS,
                       help=text("auto, hash, hash:N, none, or a sentence-transformers model name or path "
                                 "(run through ONNX when exported, see 'embedder export'; onnx:MODEL or "
                                 "st:MODEL forces one) (default: $LOCALMEM_EMBEDDER, else the embedder "
                                 "the database was made with, else auto)"))
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help=text("machine-readable JSON output"))
    group.add_argument("--color", choices=COLOR_CHOICES, default=argparse.SUPPRESS, metavar="WHEN",
                       help=text("colour the output: auto (default: on a terminal, unless $NO_COLOR is "
                                 "set), always or never"))
    return parent


class _RootParser(argparse.ArgumentParser):
    """Reports an unknown option with the usage of the command it was given to, and a "did you mean"."""

    command_parsers: dict[str, argparse.ArgumentParser]

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            target = self.command_parsers.get(getattr(parsed, "command", None) or "", self)
            target.error(unrecognized(extras, target))
        return parsed


def unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """``unrecognized arguments: --tgas (did you mean --tags?)``."""
    known = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    shown = []
    for extra in extras:
        guess = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1, cutoff=0.6) \
            if extra.startswith("-") else []
        shown.append(f"{extra} (did you mean {guess[0]}?)" if guess else extra)
    return f"unrecognized arguments: {' '.join(shown)}"


def build_parser() -> argparse.ArgumentParser:
    parser = _RootParser(
        prog="localmem", parents=[_global_options(described=True)],
        description="A memory store for AI assistants in one SQLite file (AutoMem-compatible).",
        epilog="Ids: wherever a command takes a memory id, a unique prefix of 4 or more hex digits "
               "will do (as the short ids in tables). Exit codes: 0 success, 2 bad usage or invalid "
               "input, 1 other errors. 'localmem COMMAND --help' describes a command.")
    parser.add_argument("--version", action="version", version=f"localmem {__version__}",
                        help="print the version and exit ('localmem version' says more)")
    parser.command_parsers = {}
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    hidden = _global_options(described=False)

    def command(name: str, func: CommandFunc, help_text: str,
                **kwargs: Any) -> argparse.ArgumentParser:
        epilog = kwargs.pop("epilog", None)
        sub = commands.add_parser(name, parents=[hidden], help=help_text, description=help_text,
                                  epilog=f"{epilog}\n\n{GLOBAL_POINTER}" if epilog else GLOBAL_POINTER,
                                  formatter_class=_Formatter, **kwargs)
        sub.set_defaults(func=func)
        parser.command_parsers[name] = sub
        return sub

    for group in GROUPS:
        group.register(command)
    parser.set_defaults(root_parser=parser)  # for 'completion', which reads the whole tree
    return parser


class _Formatter(argparse.HelpFormatter):
    """Keeps the blank line between an epilog's paragraphs (argparse joins them otherwise)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(_Formatter, self)._fill_text(part, width, indent)
                           for part in text.split("\n\n"))
