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

import contextlib
import io
import os
import sys
from contextlib import contextmanager

# The rest (apsw, the parser of every command, even typing) is imported in ``main``, after
# ``localmem hook`` has been sent on: a hook runs on every prompt and must start fast.
TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, TextIO

__all__ = ["main", "run_forwarded"]


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


def _plain_mcp(arguments: list[str]) -> dict[str, str] | None:
    """The global options' values when the line is ``mcp`` with global options alone (before or
    after it); None for any other line (which the parser reads, and explains when wrong)."""
    found: dict[str, str] = {}
    command = None
    index = 0
    while index < len(arguments):
        name, has_value, value = arguments[index].partition("=")
        if name in _GLOBAL_WITH_VALUE and not has_value:
            if index + 1 >= len(arguments):
                return None
            value, has_value = arguments[index + 1], "="
            index += 1
        if has_value and name in _GLOBAL_WITH_VALUE:
            found[name] = value
        elif name == "--json" and not has_value:
            pass
        elif name == "mcp" and not has_value and command is None:
            command = name
        else:
            return None
        index += 1
    return found if command == "mcp" else None


def _mcp_front(arguments: list[str]) -> int | None:
    """``localmem mcp`` answered through the store's warm process when one runs (no MCP SDK
    imported here); None to run the MCP server in this process, stdin untouched."""
    found = _plain_mcp(arguments)
    if found is None:
        return None
    from ..mcp_server.front import serve
    from ..paths import default_db_path

    return serve(found.get("--db") or default_db_path(), found.get("--embedder"))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if _is_hook(arguments):
        from ..hooks.client import run as run_hook

        # Called as the program itself (argv None): the hook may end the process at its deadline.
        return run_hook(arguments, hard_exit=argv is None)
    if argv is None:  # the program itself: a warm process for the store may answer (mcp, recall, store, list)
        served = _mcp_front(arguments)
        if served is not None:
            return served
        from ..daemon.cli_client import forward, start_after

        forwarded = forward(arguments)
        if forwarded is not None:
            return forwarded
        try:
            return _main(arguments, argv)
        finally:
            start_after(arguments)
    return _main(arguments, argv)


def _main(arguments: list[str], argv: list[str] | None) -> int:
    from .common import EXIT_USAGE
    from .output import Output
    from .parser import build_parser

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse exits 2)
        return _exit_code(exc.code)
    args.raw_argv = arguments  # for checks of what was typed where
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return _run(func, args, Output(bool(getattr(args, "json", False)), color=getattr(args, "color", "auto")))


def _run(func: Any, args: Any, out: Any) -> int:
    """One parsed command, its errors as exit codes and ``error: ...`` lines."""
    import warnings

    import apsw

    from ..errors import LocalMemError, ValidationError
    from .common import EXIT_ERROR, EXIT_USAGE

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


class _Captured(io.StringIO):
    """A stream that keeps what a command prints for a client, and says whether the client's was a
    terminal (for ``--color auto``)."""

    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def run_forwarded(argv: list[str], store: Any, *, width: int, ttys: tuple[bool, bool],
                  environ: dict[str, str], commands: tuple[str, ...],
                  stdin: str | None = None) -> tuple[int, str, str]:
    """Run ``argv`` for another process on ``store`` (a warm process's): the exit code and what was
    printed on stdout and stderr, as ``main`` in that process would have printed it. ``width``:
    the client's terminal width (0: not a terminal); ``ttys``: whether its stdout and stderr are
    terminals; ``environ``: its NO_COLOR and TERM; ``stdin``: what the client read for a ``-``
    argument. Only ``commands`` are run. Not thread-safe
    (argparse writes to ``sys.stdout``/``sys.stderr``, which are redirected): one at a time."""
    from .common import EXIT_USAGE
    from .output import DEFAULT_TERMINAL_WIDTH, MIN_TERMINAL_WIDTH, Output
    from .parser import build_parser

    stdout, stderr = _Captured(ttys[0]), _Captured(ttys[1])
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:
            code = _exit_code(exc.code)
        else:
            if getattr(args, "command", None) not in commands:
                stderr.write(f"error: a warm process runs only {', '.join(commands)}\n")
                code = EXIT_USAGE
            else:
                args.raw_argv, args.warm_store, args.stdin_text = list(argv), store, stdin
                out = Output(bool(getattr(args, "json", False)), stdout, stderr,
                             color=getattr(args, "color", "auto"), environ=environ,
                             width=max(MIN_TERMINAL_WIDTH, width) if width else DEFAULT_TERMINAL_WIDTH)
                code = _run(args.func, args, out)
    return code, stdout.getvalue(), stderr.getvalue()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
