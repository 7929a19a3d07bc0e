"""``localmem hook EVENT``: read the hook's JSON on stdin, answer on stdout, fast.

A hook runs on every prompt, so this module imports only the standard
library. When a ``localmem serve`` (or ``localmem ui``) runs for the store,
its discovery note (``discovery``) names it and the payload is forwarded
there over loopback (``POST /hooks/{event}``, with the note's secret): the
server answers from its warm store and loaded model. Without one, or when it
refuses the connection, the hook answers in-process (``events.answer_hook`` on
a freshly opened store).

A hook must never break its client: whatever happens, it exits 0; when it
has nothing to say it prints nothing, and every reason for saying nothing
goes to stderr. (In Claude Code exit code 2 blocks the prompt and other
codes are errors shown to the user.) A deadline bounds the whole run: past
it the hook prints nothing and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import socket
import sys
import threading
import time

from ..paths import default_db_path
from . import capture_report, discovery

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on every prompt
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CAPTURE_EVENTS", "HOOK_PATH", "MAX_STDIN_BYTES", "PROMPT_EVENTS", "SECRET_HEADER",
           "default_deadline", "run"]

PROMPT_EVENTS = ("SessionStart", "UserPromptSubmit")  # the client waits for these to go on
CAPTURE_EVENTS = ("PreCompact", "Stop", "SubagentStop", "SessionEnd")
PROMPT_DEADLINE = 2.0  # seconds
CAPTURE_DEADLINE = 20.0  # reading a transcript and embedding its turns takes longer
DEADLINE_ENV = "LOCALMEM_HOOK_DEADLINE"
VERBOSE_ENV = "LOCALMEM_HOOK_VERBOSE"
SETTINGS_PREFIX = "LOCALMEM_HOOK_"  # forwarded: the server answers with the hook's own settings
MAX_STDIN_BYTES = 1024 * 1024
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
CONNECT_TIMEOUT = 0.25  # loopback: a server that does not accept in this long is not there
HOOK_PATH = "/hooks/"
SECRET_HEADER = "X-Localmem-Hook-Secret"
SERVER_PID_HEADER = "x-localmem-server-pid"
MEMORY_PATH = ":memory:"
_EVENT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


class _Silent(Exception):
    """The hook says nothing; the message (already formatted) goes to stderr."""


class _Refused(Exception):
    """The server could not be used (not there, or not ours): answer in-process instead."""


class _Run:
    """One hook run's settings (a plain class: ``dataclasses`` costs tens of ms of import)."""

    def __init__(self, *, event: str, db: str, embedder: str | None, deadline: float, seconds: float,
                 verbose: bool, forward: bool) -> None:
        self.event, self.db, self.embedder = event, db, embedder
        self.deadline = deadline  # a time.monotonic() value
        self.seconds, self.verbose, self.forward = seconds, verbose, forward
        self.report: Any = None  # what the answer did (for -v)

    def left(self) -> float:
        return self.deadline - time.monotonic()


def default_deadline(event: str) -> float:
    return PROMPT_DEADLINE if event in PROMPT_EVENTS else CAPTURE_DEADLINE if event in CAPTURE_EVENTS \
        else PROMPT_DEADLINE


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit 2, which blocks a Claude Code prompt
        raise _Silent(f"localmem hook: {message} (usage: {self.format_usage().strip()[7:]})")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="localmem hook", description=(
        "Answer an assistant's hook: the hook's JSON on stdin, the answer (Claude Code's JSON) on "
        "stdout, nothing when there is nothing to say. Always exits 0; reasons go to stderr. "
        "Forwards to a running 'localmem serve' for the store when there is one."),
        epilog="Global options (--db, --embedder, --json, --color): see 'localmem --help'.")
    parser.add_argument("command", help=argparse.SUPPRESS)
    parser.add_argument("event", help="the hook event: SessionStart, UserPromptSubmit, PreCompact, Stop, "
                                      "SubagentStop or SessionEnd")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help=f"answer nothing past this long (default ${DEADLINE_ENV}, else "
                             f"{PROMPT_DEADLINE:g} s for prompt events, {CAPTURE_DEADLINE:g} s for capture)")
    parser.add_argument("--no-forward", dest="forward", action="store_false",
                        help="answer in-process even when a server runs for the store")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help=f"say on stderr who answered and how long it took (also ${VERBOSE_ENV}=1)")
    # The global options, as every command takes them (described in 'localmem --help').
    parser.add_argument("--db", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--embedder", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # output is JSON anyway
    parser.add_argument("--color", metavar="WHEN", help=argparse.SUPPRESS)
    return parser


def _settings(argv: list[str], started: float) -> _Run:
    args = _parser().parse_args(argv)
    if not _EVENT.fullmatch(args.event):
        raise _Silent(f"localmem hook: {args.event!r} is not an event name (letters, digits, _)")
    seconds = args.deadline
    if seconds is None and os.environ.get(DEADLINE_ENV, "").strip():
        try:
            seconds = float(os.environ[DEADLINE_ENV])
        except ValueError:
            raise _Silent(f"localmem hook: ${DEADLINE_ENV} must be a number of seconds, "
                          f"got {os.environ[DEADLINE_ENV]!r}") from None
    if seconds is None:
        seconds = default_deadline(args.event)
    if not 0 < seconds <= 3600:
        raise _Silent(f"localmem hook: the deadline must be more than 0 and at most 3600 seconds, got {seconds!r}")
    verbose = args.verbose or os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return _Run(event=args.event, db=args.db or default_db_path(), embedder=args.embedder,
                deadline=started + seconds, seconds=seconds, verbose=verbose, forward=args.forward)


def _read_stdin(deadline: float) -> bytes:
    """All of stdin, at most ``MAX_STDIN_BYTES``, by the deadline."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        raise _Silent("localmem hook: no stdin to read the hook's JSON from") from None
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Silent("localmem hook: stdin did not end before the deadline; answering nothing")
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):  # not selectable (a Windows pipe): read without a deadline
            ready = [fd]
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            raise _Silent(f"localmem hook: stdin holds more than {MAX_STDIN_BYTES} bytes; a hook's JSON "
                          "is smaller (the transcript is read from its path); answering nothing")
        chunks.append(chunk)


def _payload(raw: bytes, event: str) -> dict[str, Any]:
    if not raw.strip():
        raise _Silent("localmem hook: stdin is empty; expected the hook's JSON object")
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _Silent(f"localmem hook: stdin is not valid JSON ({exc}); answering nothing") from None
    if not isinstance(payload, dict):
        raise _Silent(f"localmem hook: stdin holds a JSON {type(payload).__name__}, not an object; "
                      "answering nothing")
    named = payload.get("hook_event_name")
    if isinstance(named, str) and named != event:
        sys.stderr.write(f"localmem hook: the payload names event {named!r}; answering as {event!r}, "
                         "the command's argument\n")
    return payload


def _settings_environment() -> dict[str, str]:
    """The hook's ``LOCALMEM_HOOK_*`` settings, for the server to answer with; a relative
    ``..._PATH`` is made absolute here (the server's working directory is not the hook's)."""
    found = {}
    for name, value in os.environ.items():
        if not name.startswith(SETTINGS_PREFIX) or name in (DEADLINE_ENV, VERBOSE_ENV):
            continue
        if name.endswith("_PATH") and value.strip() and not os.path.isabs(os.path.expanduser(value.strip())):
            value = os.path.abspath(value.strip())
        found[name] = value
    return found


def _http_post(note: discovery.Note, path: str, body: bytes, run: _Run) -> tuple[int, dict[str, str], bytes]:
    """One ``POST`` over loopback, bounded by the deadline; raises ``_Refused`` or ``_Silent``."""
    family = socket.AF_INET6 if ":" in note.host else socket.AF_INET
    host_header = f"[{note.host}]:{note.port}" if family == socket.AF_INET6 else f"{note.host}:{note.port}"
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, min(CONNECT_TIMEOUT, run.left())))
        try:
            sock.connect((note.host, note.port))
        except OSError as exc:  # refused, or not accepting: a server that is gone or stuck
            raise _Refused(f"connecting to {host_header} failed ({exc})") from None
        head = (f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n{SECRET_HEADER}: {note.secret}\r\nConnection: close\r\n\r\n")
        received: list[bytes] = []
        size = 0
        try:
            sock.settimeout(max(0.001, run.left()))
            sock.sendall(head.encode("ascii") + body)
            while True:
                left = run.left()
                if left <= 0:
                    raise socket.timeout()
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _Silent(f"localmem hook: the server's answer exceeds {MAX_RESPONSE_BYTES} bytes; "
                                  "answering nothing")
                received.append(chunk)
        except socket.timeout:
            raise _Silent(f"localmem hook: the localmem server (pid {note.pid}, {host_header}) did not answer "
                          f"{run.event} within the deadline ({run.seconds:g} s); answering nothing") from None
        except ConnectionError as exc:
            raise _Refused(f"the server at {host_header} dropped the connection ({exc})") from None
    finally:
        sock.close()
    return _parse_response(b"".join(received), host_header)


def _parse_response(raw: bytes, where: str) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2) if sep else []
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise _Refused(f"{where} did not answer in HTTP")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif headers.get("content-length", "").isdigit():
        body = body[:int(headers["content-length"])]
    return int(parts[1]), headers, body


def _unchunk(body: bytes) -> bytes:
    out: list[bytes] = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out.append(rest[:size])
        body = rest[size + 2:]
    return b"".join(out)


def _forwarded(run: _Run, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The server's answer and who gave it; ``_Refused`` when there is no usable server."""
    if run.db == MEMORY_PATH:
        raise _Refused("the store is in memory: no server shares it")
    if not discovery.supported():
        raise _Refused("finding a server needs a POSIX system (owner checks on its note)")
    try:
        note = discovery.read_note(run.db)
    except discovery.StaleNote as exc:
        raise _Refused(f"stale server note: {exc}") from None
    except discovery.NoteRefused as exc:
        # Not ours, or tampered with: never trusted, and worth a word even when not verbose.
        sys.stderr.write(f"localmem hook: ignoring the server note: {exc}\n")
        raise _Refused("the server note was refused") from None
    except OSError as exc:
        raise _Refused(f"the server note could not be read ({exc})") from None
    if note is None:
        raise _Refused(f"no server runs for {run.db} (no note at {discovery.note_path(run.db)})")
    owner = discovery.listener_owner(note.host, note.port)
    if owner is not None and owner != os.geteuid():
        sys.stderr.write(f"localmem hook: ignoring the server note: port {note.port} is held by uid {owner}, "
                         "not by this user (the server it names is gone)\n")
        raise _Refused("the server note was refused")
    body = json.dumps({"payload": payload, "settings": _settings_environment()}).encode("utf-8")
    status, headers, raw = _http_post(note, HOOK_PATH + run.event, body, run)
    where = f"the localmem server (pid {headers.get(SERVER_PID_HEADER, note.pid)}, {note.host}:{note.port})"
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    if status != 200:
        message = data.get("message") if isinstance(data, dict) else None
        if status in (400, 413, 422) or status >= 500:  # the payload or the answer itself failed
            raise _Silent(f"localmem hook: {where} answered {status}: {message or raw[:200]!r}; answering nothing")
        raise _Refused(f"{where} answered {status} ({message or 'no message'})")
    if not isinstance(data, dict) or not (data.get("answer") is None or isinstance(data.get("answer"), dict)):
        raise _Silent(f"localmem hook: {where} answered something other than {{\"answer\": ...}}; "
                      "answering nothing")
    run.report = data.get("report")
    return data["answer"], where


def _in_process(run: _Run, payload: dict[str, Any], hard_exit: bool) -> dict[str, Any] | None:
    """``answer_hook`` on a freshly opened store, in a thread the deadline bounds."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            from ..settings import choose_embedder, opens_read_only
            from ..store import MemoryStore
            from .events import answer_hook_with_report
            from .settings import HookSettings

            settings = HookSettings.from_env()
            with MemoryStore(run.db, embedder=choose_embedder(run.embedder, run.db),
                             read_only=opens_read_only(run.db)) as store:
                answered = answer_hook_with_report(store, run.event, payload, settings)
                outcome["answer"], run.report = answered.output, answered.report
        except BaseException as exc:  # reported by the caller; a hook never raises
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="localmem-hook", daemon=True)
    worker.start()
    worker.join(max(0.0, run.left()))
    if worker.is_alive():
        message = (f"localmem hook: {run.event} was not answered within the deadline ({run.seconds:g} s, "
                   f"in-process on {run.db}); answering nothing\n")
        if hard_exit:
            # The worker may hold the database mid-write: end the process now rather than
            # let interpreter shutdown meet it (SQLite rolls an unfinished write back).
            sys.stderr.write(message)
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(0)
        raise _Silent(message.rstrip("\n"))
    error = outcome.get("error")
    if error is not None:
        detail = getattr(error, "message", None) or str(error) or type(error).__name__
        raise _Silent(f"localmem hook: {run.event} failed in-process: {detail}; answering nothing")
    return outcome.get("answer")


def run(argv: list[str], *, hard_exit: bool = False) -> int:
    """The ``hook`` command (``argv`` without the program name, global options included).

    ``hard_exit``: this is the whole process (the console script), so a worker
    still running at the deadline is left by ending the process.
    """
    started = time.monotonic()
    try:
        settings = _settings(argv, started)
        payload = _payload(_read_stdin(settings.deadline), settings.event)
        answer, who = None, ""
        if settings.forward:
            try:
                answer, who = _forwarded(settings, payload)
            except _Refused as exc:
                if settings.verbose:
                    sys.stderr.write(f"localmem hook: answering in-process: {exc}\n")
        if not who:
            answer = _in_process(settings, payload, hard_exit)
            who = "in-process"
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        if settings.verbose:
            ms = (time.monotonic() - started) * 1000
            said = "an answer" if answer is not None else "nothing to say"
            sys.stderr.write(f"localmem hook: {settings.event}: {said}, from {who}, in {ms:.0f} ms\n")
            for line in capture_report.describe(settings.report):
                sys.stderr.write(f"localmem hook: {line}\n")
    except _Silent as exc:
        sys.stderr.write(f"{exc}\n")
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        pass
    except Exception as exc:  # a hook never breaks its client
        sys.stderr.write(f"localmem hook: unexpected {type(exc).__name__}: {exc}; answering nothing\n")
    return 0
