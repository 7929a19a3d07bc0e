"""The ``localmem`` command line: store, recall, maintain and move memories.

``localmem [--db PATH] [--embedder NAME] [--json] [--color WHEN] COMMAND ...``;
the global options are also accepted after the command. Exit codes: 0 success, 2 bad
usage or invalid input (``ValidationError``), 1 anything else (not found,
configuration, database errors, doctor problems), with ``error: ...`` on
stderr. One module per command group (``memories``, ``edges``, ``browse``, ``recall``,
``maintenance``, ``servers``, ``demo``, ``embedder``, ``shell``); ``parser``
puts them together and ``output`` formats for people.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

# The rest (apsw, the parser of every command, even typing) is imported in ``main``, after
# ``localmem hook`` has been sent on: a hook runs on every prompt and must start fast.
TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, TextIO

__all__ = ["main"]


def _show_warning(message: Any, category: Any, filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    sys.stderr.write(f"warning: {message}\n")


@contextmanager
def _model_notes() -> Iterator[None]:
    """Show the embedding model's loading and one-time ONNX export steps on stderr."""
    import logging

    logger = logging.getLogger("localmem.onnx")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("localmem: %(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _exit_code(code: Any) -> int:
    from .common import EXIT_ERROR, EXIT_OK

    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return EXIT_ERROR


_GLOBAL_WITH_VALUE = ("--db", "--embedder", "--color")


def _is_hook(arguments: list[str]) -> bool:
    """Whether the command is ``hook``: global options (``--db PATH``, ``--json``...), then ``hook``."""
    index = 0
    while index < len(arguments):
        arg = arguments[index]
        if arg in _GLOBAL_WITH_VALUE:
            index += 2
        elif arg == "--json" or arg.split("=", 1)[0] in _GLOBAL_WITH_VALUE:
            index += 1
        else:
            return arg == "hook"
    return False


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if _is_hook(arguments):
        from ..hooks.client import run as run_hook

        # Called as the program itself (argv None): the hook may end the process at its deadline.
        return run_hook(arguments, hard_exit=argv is None)
    import warnings

    import apsw

    from ..errors import LocalMemError, ValidationError
    from .common import EXIT_ERROR, EXIT_OK, EXIT_USAGE
    from .output import Output
    from .parser import build_parser

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse exits 2)
        return _exit_code(exc.code)
    args.raw_argv = list(sys.argv[1:] if argv is None else argv)  # for checks of what was typed where
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    out = Output(bool(getattr(args, "json", False)), color=getattr(args, "color", "auto"))
    with warnings.catch_warnings(), _model_notes():
        warnings.showwarning = _show_warning  # "warning: ..." lines, not file:line dumps
        try:
            return func(args, out)
        except ValidationError as exc:
            out.note(f"error: {exc.message}")
            return EXIT_USAGE
        except LocalMemError as exc:
            out.note(f"error: {exc.message}")
            return EXIT_ERROR
        except apsw.Error as exc:
            out.note(f"error: database error: {exc}")
            return EXIT_ERROR
        except BrokenPipeError:
            # The reader went away (say, `localmem export | head`): stop quietly.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            return EXIT_ERROR
        except OSError as exc:
            out.note(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
            return EXIT_ERROR
        except KeyboardInterrupt:
            out.note("interrupted")
            return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
