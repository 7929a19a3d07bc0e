"""What every command shares: exit codes, opening the store, option values."""

from __future__ import annotations

import argparse
import os
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AmbiguousIdError, LocalMemError, NotFoundError, ValidationError
from ..settings import choose_embedder, default_db_path, opens_read_only
from ..storage.database import MEMORY_PATH
from ..timegrammar import read_time_expression
from ..timeparse import format_timestamp, human_time, parse_timestamp, short_date
from ..validation import decode_json

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .output import Output

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

# A command function: parsed arguments and where to write, to an exit code.
CommandFunc = Callable[[argparse.Namespace, "Output"], int]
# Adds a subcommand with the global options; returns its parser for the arguments.
AddCommand = Callable[..., argparse.ArgumentParser]


def db_path(args: argparse.Namespace) -> str:
    return getattr(args, "db", None) or default_db_path()


def open_store(args: argparse.Namespace, *, must_exist: bool = False,
               path: str | None = None, read_only: bool = False) -> MemoryStore:
    """Open the database named by ``--db`` (or ``path``) with the chosen embedder.

    A file that cannot be written (read-only media) is opened read-only: the
    read commands work, and a write fails saying the store is read-only.
    ``read_only`` asks for that anyway (a dry run that must not even migrate).
    """
    from ..store import MemoryStore

    lent = getattr(args, "warm_store", None)
    if lent is not None and path is None:
        return _Lent(lent)  # type: ignore[return-value]  # used as `with open_store(...) as store`
    path = path or db_path(args)
    if must_exist and path != MEMORY_PATH and not Path(path).expanduser().exists():
        raise LocalMemError(f"no database at {path} (give --db PATH or set $LOCALMEM_DB; "
                            "'localmem store' or 'localmem import' creates one)")
    return MemoryStore(path, embedder=choose_embedder(getattr(args, "embedder", None), path),
                       read_only=read_only or opens_read_only(path))


class _Lent:
    """A warm process's store lent to one command it runs for a client: ``with`` leaves it open."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def __enter__(self) -> MemoryStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        return None


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """``-v`` for the commands a warm process answers (read before parsing, by ``daemon.cli_client``)."""
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="say on stderr whether the store's warm process answered, or why not (docs/daemon.md)")


def token_argument(args: argparse.Namespace, env: str, out: Output) -> str | None:
    """``--token``, else ``$env``. A token given as an argument is said to be readable: any local
    user sees a running process's arguments (ps, /proc/PID/cmdline), its environment only the same user."""
    if args.token is None:
        token, where = os.environ.get(env), f"${env}"
    else:
        out.note(f"warning: --token can be read by every user of this machine while localmem runs "
                 f"(ps, /proc/<pid>/cmdline); set ${env} instead")
        token, where = args.token, "--token"
    # The token travels in an HTTP header, which cannot carry a line break or another control
    # character: refused here by name rather than as a traceback from the HTTP library.
    if token is not None and any(unicodedata.category(char) in ("Cc", "Cs") for char in token.strip()):
        raise ValidationError(f"{where} holds a control character (a line break?) or bytes that are not UTF-8: "
                              "an API token is sent in an HTTP header, which cannot carry them; give the token alone")
    return token


# Said in the help of every argument that takes memory text or a query: what is typed on a command
# line is readable by every user of this machine while the command runs (ps, /proc/PID/cmdline).
SEEN_BY_OTHERS = "visible to other local users while the command runs; '-' reads it from stdin instead"


def text_argument(value: str | None, args: argparse.Namespace, *, one_line: bool = False) -> str | None:
    """``value``, or for ``-`` the text on stdin: this process's, or the one a warm process was sent
    with the command (``args.stdin_text``). ``one_line`` (a query, a search string): the final line
    ending ``echo`` adds is dropped, so ``echo cat | localmem recall -`` asks what ``recall cat`` asks."""
    if value != "-":
        return value
    given = getattr(args, "stdin_text", None)
    if given is None and getattr(args, "warm_store", None) is not None:
        raise ValidationError("'-' reads stdin, and this command came to the warm process without it")
    text = sys.stdin.read() if given is None else given
    if one_line:
        text = text[:-1] if text.endswith("\n") else text
        text = text[:-1] if text.endswith("\r") else text
    return text


def split_list(values: Sequence[str] | None) -> list[str] | None:
    """Repeated and comma-separated values as one list (None when the option was not given)."""
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def time_option(value: str | None, option: str, out: Output) -> str | None:
    """An option's time: ISO 8601 as given, or a time expression ('yesterday', '3 days ago',
    '27/11/2026') as the start of its window, which a note on stderr names."""
    if value is None or not value.strip():
        return value
    try:
        parse_timestamp(value, field=option)
        return value
    except ValidationError:
        pass
    reading = read_time_expression(value, datetime.now(timezone.utc))
    if not reading.understood or reading.start is None or reading.start == datetime.min.replace(
            tzinfo=timezone.utc):
        why = reading.error or "it has no start"
        raise ValidationError(f"{option} must be an ISO 8601 time or a time expression such as 'yesterday', "
                              f"'3 days ago' or '27/11/2026' ({value!r}: {why})")
    start = format_timestamp(reading.start)
    out.note(f"note: {option} {value!r} was read as {human_time(start)} (the start of that time)")
    for note in reading.notes:
        out.note(f"note: {option} {note}")
    return start


def json_object(text: str | None, option: str) -> Any:
    """An option's JSON value; a 400-class error naming the option (nesting and NaN refused)."""
    if text is None:
        return None
    return decode_json(text, option)


def key_values(pairs: Sequence[str] | None, option: str) -> dict[str, Any]:
    """``key=value`` pairs; a key given twice collects a list."""
    values: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValidationError(f"{option} expects key=value, got {pair!r}")
        if key in values:
            previous = values[key]
            values[key] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            values[key] = value
    return values


def resolve_id(store: MemoryStore, text: str, what: str = "memory id") -> str:
    """The full id a command's id argument names: a full id, or a unique prefix as git takes one.

    An ambiguous prefix is a usage error that lists the candidates (short id,
    date, start of the content), so the next try can be exact.
    """
    try:
        return store.resolve_id(text, what)
    except AmbiguousIdError as exc:
        from .output import short

        lines = [exc.message + "; candidates:"]
        for candidate in exc.candidates:
            try:
                record = store.get(candidate)
            except NotFoundError:  # deleted meanwhile
                continue
            lines.append(f"  {candidate}  {short_date(record['timestamp'])}  {short(record['content'], 50)}")
        if exc.more:
            lines.append("  ...")
        raise AmbiguousIdError("\n".join(lines), candidates=exc.candidates, more=exc.more) from None


@contextmanager
def naming(memory_id: str) -> Iterator[None]:
    """Say which memory was not found."""
    try:
        yield
    except NotFoundError as exc:
        raise NotFoundError(f"{exc.message}: {memory_id.strip()}") from None
