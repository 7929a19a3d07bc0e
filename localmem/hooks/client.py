"""``localmem hook EVENT``: read the hook's JSON on stdin, answer on stdout, fast.

A hook runs on every prompt, so this module imports only the standard
library. It asks the store's warm process first (``localmem.daemon``: a Unix
socket). Else, when a ``localmem serve`` (or ``localmem ui``) runs for the store,
its discovery note (``discovery``) names it and the payload is forwarded
there over loopback (``POST /hooks/{event}``, with the note's secret): the
server answers from its warm store and loaded model. Without either, or when
they refuse, the hook answers in-process (``events.answer_hook`` on a freshly
opened store) and, once it has answered, starts the warm process for the next
prompt.

A hook must never break its client: whatever happens, it exits 0; when it
has nothing to say it prints nothing, and every reason for saying nothing
goes to stderr. (In Claude Code exit code 2 blocks the prompt and other
codes are errors shown to the user.) A deadline bounds the whole run: past
it the hook prints nothing and says so.
"""

from __future__ import annotations

import os
import select
import sys
import time

from ..daemon import client as warm_client, plain_json, rundir as warm_dir
from ..paths import default_db_path
from .event_names import CAPTURE_EVENTS, EVENTS, INJECT_EVENTS

# Imported where needed, not here (each costs the prompt ms when the warm process answers):
# argparse (only for --help and unusual command lines), threading and the store (in-process),
# discovery and socket (a 'localmem serve' for the store), capture_report (-v).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on every prompt
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from . import discovery

__all__ = ["CAPTURE_EVENTS", "HOOK_PATH", "MAX_STDIN_BYTES", "PROMPT_EVENTS", "SECRET_HEADER",
           "default_deadline", "run"]

PROMPT_EVENTS = INJECT_EVENTS  # the client waits for these to go on
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
MAX_EVENT_NAME = 64
_GLOBAL_WITH_VALUE = ("--db", "--embedder", "--color")


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


def _parser() -> argparse.ArgumentParser:
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse would exit 2, which blocks a Claude Code prompt
            raise _Silent(f"localmem hook: {message} (usage: {self.format_usage().strip()[7:]})")

    parser = _Parser(prog="localmem hook", description=(
        "Answer an assistant's hook: the hook's JSON on stdin, the answer (Claude Code's JSON) on "
        "stdout, nothing when there is nothing to say. Always exits 0; reasons go to stderr. "
        "Forwards to the store's warm process, or to a running 'localmem serve' for the store."),
        epilog="Global options (--db, --embedder, --json, --color): see 'localmem --help'.")
    parser.add_argument("command", help=argparse.SUPPRESS)
    parser.add_argument("event", help="the hook event: SessionStart, UserPromptSubmit, PreCompact, Stop, "
                                      "SubagentStop or SessionEnd")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help=f"answer nothing past this long (default ${DEADLINE_ENV}, else "
                             f"{PROMPT_DEADLINE:g} s for prompt events, {CAPTURE_DEADLINE:g} s for capture)")
    parser.add_argument("--no-forward", dest="forward", action="store_false",
                        help="answer in-process even when a warm process or a server runs for the store")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help=f"say on stderr who answered, how long it took and why each note was injected "
                             f"or not (also ${VERBOSE_ENV}=1)")
    # The global options, as every command takes them (described in 'localmem --help').
    parser.add_argument("--db", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--embedder", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # output is JSON anyway
    parser.add_argument("--color", metavar="WHEN", help=argparse.SUPPRESS)
    return parser


class _Arguments:
    """The command line as ``_parser`` reads it (a plain class: no argparse on the fast path)."""

    def __init__(self) -> None:
        self.event: str = ""
        self.deadline: float | None = None
        self.forward, self.verbose = True, False
        self.db: str | None = None
        self.embedder: str | None = None


def _quick_arguments(argv: list[str]) -> _Arguments | None:
    """The usual command line (``[--db P] [--embedder N] hook EVENT [--deadline S] [--no-forward]
    [-v]``, the hooks install writes) read without argparse, whose import and help formatter cost
    the prompt milliseconds; None for anything else (``--help``, a bad value, an unknown word),
    which ``_parser`` then reads and explains."""
    found = _Arguments()
    words: list[str] = []
    index = 0
    while index < len(argv):
        name, has_value, value = argv[index].partition("=")
        if not has_value and name in (*_GLOBAL_WITH_VALUE, "--deadline"):
            if index + 1 >= len(argv):
                return None
            value, has_value = argv[index + 1], "="
            index += 1
        if has_value and name == "--db":
            found.db = value
        elif has_value and name == "--embedder":
            found.embedder = value
        elif has_value and name == "--color":
            pass  # accepted as every command accepts it; the output is JSON
        elif has_value and name == "--deadline":
            try:
                found.deadline = float(value)
            except ValueError:
                return None
        elif has_value or name.startswith("-") and name not in ("--json", "--no-forward", "-v", "--verbose"):
            return None
        elif name == "--no-forward":
            found.forward = False
        elif name in ("-v", "--verbose"):
            found.verbose = True
        elif name != "--json":
            words.append(name)
        index += 1
    if len(words) != 2:
        return None
    found.event = words[1]
    return found


def _is_event_name(name: str) -> bool:
    """Letters, digits and _, a letter first, at most ``MAX_EVENT_NAME`` (ASCII only)."""
    return (0 < len(name) <= MAX_EVENT_NAME and name.isascii() and name[0].isalpha()
            and name.replace("_", "").isalnum())


def _settings(argv: list[str], started: float) -> _Run:
    args: Any = _quick_arguments(argv) or _parser().parse_args(argv)
    if not _is_event_name(args.event):
        raise _Silent(f"localmem hook: {args.event!r} is not an event name (letters, digits, _)")
    if args.event not in EVENTS:  # refused before the store is opened (0.4 s in-process)
        raise _Silent(f"localmem hook: {args.event!r} is not an event localmem answers "
                      f"(known: {', '.join(EVENTS)}); answering nothing")
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
        payload = plain_json.loads(raw)
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
    import socket

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
    from . import discovery

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
    body = plain_json.dumps({"payload": payload, "settings": _settings_environment()}).encode("utf-8")
    status, headers, raw = _http_post(note, HOOK_PATH + run.event, body, run)
    where = f"the localmem server (pid {headers.get(SERVER_PID_HEADER, note.pid)}, {note.host}:{note.port})"
    try:
        data = plain_json.loads(raw) if raw else None
    except (ValueError, RecursionError):
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


def _in_process(run: _Run, payload: dict[str, Any], hard_exit: bool,
                before_exit: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """``answer_hook`` on a freshly opened store, in a thread the deadline bounds (``before_exit``
    runs when the deadline ends the process)."""
    import threading

    _with_site()
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
            if before_exit is not None:
                before_exit()
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(0)
        raise _Silent(message.rstrip("\n"))
    error = outcome.get("error")
    if error is not None:
        detail = getattr(error, "message", None) or str(error) or type(error).__name__
        raise _Silent(f"localmem hook: {run.event} failed in-process: {detail}; answering nothing")
    return outcome.get("answer")


def _with_site() -> None:
    """Started without ``site`` (``python -S``, the fast command ``hooks install`` writes), this
    process finds the store's dependencies (apsw, numpy) only once ``site`` adds the
    site-packages folders, as a normal start would have."""
    if "site" not in sys.modules:
        import site

        site.main()


def _explain(report: Any) -> None:
    """-v: the decisions the answer explained (its report's ``explain`` lines), then why nothing was said."""
    if not isinstance(report, dict):
        return
    from ..text import visible  # a folder's name (the payload's cwd) may hold control characters

    lines = report.get("explain")
    for line in lines if isinstance(lines, list) else []:
        sys.stderr.write(f"localmem hook:   {visible(str(line)[:400])}\n")
    if report.get("reason"):
        sys.stderr.write(f"localmem hook:   {visible(str(report['reason'])[:400])}\n")


def run(argv: list[str], *, hard_exit: bool = False) -> int:
    """The ``hook`` command (``argv`` without the program name, global options included).

    ``hard_exit``: this is the whole process (the console script), so a worker
    still running at the deadline is left by ending the process.
    """
    started = time.monotonic()
    settings: _Run | None = None
    start_warm = False  # no warm process answered: one is started once this prompt is answered
    try:
        settings = _settings(argv, started)
        payload = _payload(_read_stdin(settings.deadline), settings.event)
        answer, who = None, ""
        if settings.forward:
            try:
                answer, who = _warm_process(settings, payload)
            except _Refused as exc:
                start_warm = _startable(settings)
                if settings.verbose:
                    sys.stderr.write(f"localmem hook: not from the warm process: {exc}\n")
            if not who:
                try:
                    answer, who = _forwarded(settings, payload)
                    start_warm = False  # a 'localmem serve' answers for the store
                except _Refused as exc:
                    if settings.verbose:
                        sys.stderr.write(f"localmem hook: answering in-process: {exc}\n")
        if not who:
            start_now = settings if hard_exit and start_warm else None  # also when the deadline ends the run
            answer = _in_process(settings, payload, hard_exit,
                                 (lambda: _start_warm(start_now)) if start_now is not None else None)
            who = "in-process"
        if answer is not None:
            sys.stdout.write(plain_json.dumps(answer) + "\n")
            sys.stdout.flush()
        if settings.verbose:
            ms = (time.monotonic() - started) * 1000
            said = "an answer" if answer is not None else "nothing to say"
            sys.stderr.write(f"localmem hook: {settings.event}: {said}, from {who}, in {ms:.0f} ms\n")
            from . import capture_report

            for line in capture_report.describe(settings.report):
                sys.stderr.write(f"localmem hook: {line}\n")
            _explain(settings.report)
    except _Silent as exc:
        sys.stderr.write(f"{exc}\n")
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        pass
    except Exception as exc:  # a hook never breaks its client
        sys.stderr.write(f"localmem hook: unexpected {type(exc).__name__}: {exc}; answering nothing\n")
    if start_warm and settings is not None:
        _start_warm(settings)
    return 0


def _startable(run: _Run) -> bool:
    """Whether this hook should start the store's warm process once it has answered."""
    return run.db != MEMORY_PATH and warm_dir.enabled() and os.path.isfile(run.db)


def _start_warm(run: _Run) -> None:
    """Start the warm process (after this prompt was answered: the two would share the cores)."""
    try:
        said = warm_client.start(run.db, embedder=warm_client.embedder_choice(run.embedder))
    except warm_client.NotRunning as exc:
        said = str(exc)
    except Exception as exc:  # a hook never breaks its client
        said = f"the warm process could not be started: {type(exc).__name__}: {exc}"
    if run.verbose:
        sys.stderr.write(f"localmem hook: {said}\n")


def _warm_process(run: _Run, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The store's warm process's answer (``localmem.daemon``), and who gave it; ``_Refused``
    when there is none (or it is off, or serves another embedder)."""
    if run.db == MEMORY_PATH or not warm_dir.enabled():
        raise _Refused("the warm process is off ($LOCALMEM_DAEMON=0)" if run.db != MEMORY_PATH
                       else "the store is in memory")
    body = {"event": run.event, "payload": payload, "settings": _settings_environment()}
    timing: dict[str, float] = {}
    try:
        result = warm_client.ask(run.db, "hook", body, deadline=run.deadline,
                                 embedder=warm_client.embedder_choice(run.embedder), timing=timing)
    except warm_client.NotRunning as exc:
        if time.monotonic() >= run.deadline:
            raise _Silent(f"localmem hook: the warm process did not answer {run.event} within the deadline "
                          f"({run.seconds:g} s); answering nothing") from None
        raise _Refused(str(exc)) from None
    except warm_client.Failed as exc:
        if exc.status == 400:  # the payload itself is wrong: in-process would say the same
            raise _Silent(f"localmem hook: the warm process answered 400: {exc.message}; answering nothing") from None
        raise _Refused(f"the warm process declined ({exc.message})") from None
    if not isinstance(result, dict) or not (result.get("answer") is None or isinstance(result.get("answer"), dict)):
        raise _Silent("localmem hook: the warm process answered something other than an answer; answering nothing")
    run.report = result.get("report")
    took = f" (its answer took {timing['took_ms']:.0f} ms)" if "took_ms" in timing else ""
    return result["answer"], "the warm process" + took
