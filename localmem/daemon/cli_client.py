"""``localmem recall|store|list`` answered by the store's warm process when one runs.

Called by the CLI before it imports anything heavy: it finds the command,
``--db`` and ``--embedder`` in the arguments, and sends the arguments, the
terminal's width and whether stdout/stderr are terminals; the warm process
runs the same command on its open store and sends back the exit code and
what it printed, which is printed here as it came. ``None`` means "run it
here": no warm process (``start_after`` then starts one for the next ``recall``), another
embedder asked for, or a command it does not run. With ``-v`` it says which.
"""

from __future__ import annotations

import io
import os
import sys
import time

from ..paths import default_db_path
from . import client, rundir

__all__ = ["CLI_DEADLINE", "forward", "start_after"]

COMMANDS = ("recall", "store", "list")
WITH_STDIN = ("recall",)  # '-' (the query on stdin) is read here and sent with the command
STARTS = ("recall",)  # the command that starts a warm process when none runs
CLI_DEADLINE = 120.0  # a recall over a large store with expansion may take seconds
_WITH_VALUE = ("--db", "--embedder", "--color")


def _scan(arguments: list[str]) -> tuple[str | None, str | None, str | None, bool]:
    """The command, ``--db``, ``--embedder`` and ``-v`` as the parser would read them (global
    options before or after the command); the command is None when the line is unusual
    (``--``, ``--help``) and is better left to the parser."""
    command = db = embedder = None
    verbose = False
    index = 0
    while index < len(arguments):
        arg = arguments[index]
        name, has_value, value = arg.partition("=")
        if arg in ("--", "-h", "--help"):
            return None, None, None, verbose
        if arg in _WITH_VALUE and index + 1 < len(arguments):
            name, value, has_value = arg, arguments[index + 1], "="
            index += 1
        if has_value and name == "--db":
            db = value
        elif has_value and name == "--embedder":
            embedder = value
        elif arg in ("-v", "--verbose"):
            verbose = True
        elif command is None and not arg.startswith("-"):
            command = arg
        index += 1
    return command, db, embedder, verbose


def _width() -> int:
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return 0


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def forward(arguments: list[str]) -> int | None:
    """The exit code when the warm process answered; None to run the command in this process.

    A ``recall -`` reads its query from stdin here and sends it with the command (over the
    private socket, never on a command line); when it is run in this process after all, the text
    read is put back as ``sys.stdin``. ``store -`` (and ``-`` on a terminal) is left to this process."""
    command, db, embedder, verbose = _scan(arguments)
    if command not in COMMANDS or not rundir.enabled():
        return None
    if "-" not in arguments:
        return _forward(arguments, None, db, embedder, verbose)
    if command not in WITH_STDIN or _isatty(sys.stdin):
        _say(verbose, "answering in-process: '-' reads this process's stdin")
        return None
    text = sys.stdin.read()
    answered = _forward(arguments, text, db, embedder, verbose)
    if answered is None:
        sys.stdin = io.StringIO(text)
    return answered


def _forward(arguments: list[str], stdin: str | None, db: str | None, embedder: str | None,
             verbose: bool) -> int | None:
    db = db or default_db_path()
    if db == ":memory:":
        return None
    choice = client.embedder_choice(embedder)
    started = time.monotonic()
    body = {"argv": arguments, "width": _width(), "ttys": [_isatty(sys.stdout), _isatty(sys.stderr)],
            "environ": {k: os.environ[k] for k in ("NO_COLOR", "TERM") if k in os.environ}}
    if stdin is not None:
        body["stdin"] = stdin
    timing: dict[str, float] = {}
    try:
        result = client.ask(db, "cli", body, deadline=started + CLI_DEADLINE, embedder=choice, timing=timing)
    except client.NotRunning as exc:
        _say(verbose, f"answering in-process: {exc}")
        return None
    except client.Failed as exc:
        _say(verbose, f"answering in-process: the warm process declined ({exc.message})")
        return None
    if not (isinstance(result, dict) and type(result.get("code")) is int
            and isinstance(result.get("stdout"), str) and isinstance(result.get("stderr"), str)):
        _say(verbose, "answering in-process: the warm process's answer was malformed")
        return None
    if stdin is not None and result.get("stdin") is not True:  # one started by an older localmem
        _say(verbose, "answering in-process: the warm process does not take a query on stdin "
                      "('localmem daemon stop' ends it; the next recall starts a new one)")
        return None
    sys.stdout.write(result["stdout"])
    sys.stdout.flush()
    sys.stderr.write(result["stderr"])
    took = f" (its answer took {timing['took_ms']:.0f} ms)" if "took_ms" in timing else ""
    _say(verbose, f"answered by the warm process in {(time.monotonic() - started) * 1000:.0f} ms{took}")
    return result["code"]


def start_after(arguments: list[str]) -> None:
    """Once a ``recall`` was answered in-process, start the store's warm process for the next one
    (not before: on a small machine the two would share the cores)."""
    command, db, embedder, verbose = _scan(arguments)
    if command not in STARTS or not rundir.enabled():
        return
    db = db or default_db_path()
    if db == ":memory:" or not os.path.isfile(db):
        return
    try:
        _say(verbose, client.start(db, embedder=client.embedder_choice(embedder)))
    except client.NotRunning as exc:
        _say(verbose, str(exc))


def _say(verbose: bool, text: str) -> None:
    if verbose:
        sys.stderr.write(f"localmem: {text}\n")
