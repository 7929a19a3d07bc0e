"""Talking to a store's warm process, and starting one (detached) when there is none.

``ask`` sends one request and returns the answer's ``result``; it raises
``NotRunning`` when no warm process answers (none started, one starting, a
stale socket, another user's socket: the caller answers in-process) and
``Failed`` when the warm process answered with an error (the request itself
was bad). ``start`` spawns ``localmem daemon run`` in a new session with its
output to the log, and never waits for it: whoever calls it answers this
request itself.

Liveness is the lock file: the warm process holds ``fcntl.flock`` on it for
its whole life, and the kernel drops the lock when it dies however it dies.
So a socket that refuses connections while the lock is free is stale and is
removed (under the lock), and of two starters racing only the process that
takes the lock serves; the other exits at once.
"""

from __future__ import annotations

import _socket  # the C module under ``socket``, which imports enum and selectors: a hook's milliseconds
import errno
import fcntl
import os
import struct
import sys
import time

from . import rundir, wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

__all__ = ["DEFAULT_IDLE_SECONDS", "IDLE_ENV", "Failed", "NotRunning", "ask", "embedder_choice", "idle_seconds",
           "describe", "lock_is_free", "start"]

DEFAULT_IDLE_SECONDS = 30 * 60
IDLE_ENV = "LOCALMEM_DAEMON_IDLE"

CONNECT_TIMEOUT = 0.2  # a warm process accepts at once; one that does not is stuck or gone
MAX_LOG_BYTES = 1024 * 1024  # the log is started afresh (the old one kept as .log.1) past this
EMBEDDER_ENV = "LOCALMEM_EMBEDDER"
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class NotRunning(Exception):
    """No usable warm process (the message says why); answer in-process. ``refused``: there is a
    folder or socket, but it is not this user's (or not private), so it is never used."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class Failed(Exception):
    """The warm process answered this request with an error (``status``: 400 bad input, 409 it
    serves another embedder, 500 it failed)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def embedder_choice(given: str | None, environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The embedder a client asks for, as the warm process compares it with its own: ``--embedder``,
    else ``$LOCALMEM_EMBEDDER``, else "" (the store's own)."""
    env = os.environ if environ is None else environ
    return (given or env.get(EMBEDDER_ENV) or "").strip()


def idle_seconds(given: float | None, environ: dict[str, str] | os._Environ[str] | None = None) -> float:
    """``--idle``, else ``$LOCALMEM_DAEMON_IDLE``, else 30 minutes; ``ValueError`` naming it."""
    env = os.environ if environ is None else environ
    where, value = "--idle", given
    if value is None and env.get(IDLE_ENV, "").strip():
        where = f"${IDLE_ENV}"
        try:
            value = float(env[IDLE_ENV])
        except ValueError:
            raise ValueError(f"{where} must be a number of seconds, got {env[IDLE_ENV]!r}") from None
    if value is None:
        return DEFAULT_IDLE_SECONDS
    if not 0 < value <= 7 * 24 * 3600:
        raise ValueError(f"{where} must be more than 0 seconds and at most a week, got {value!r}")
    return value


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end (``SO_PEERCRED``: the kernel's word, not the peer's)."""
    _, uid, _ = _UCRED.unpack(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED.size))
    return uid


def _connect(where: rundir.Where, timeout: float) -> socket.socket:
    try:
        rundir.check_folder(where.folder, create=False)
        rundir.check_socket(where.socket)
    except FileNotFoundError:
        raise NotRunning(f"no warm process runs for {where.store}") from None
    except rundir.Refused as exc:
        sys.stderr.write(f"localmem: ignoring the warm process's socket: {exc}\n")  # worth a word always
        raise NotRunning(str(exc), refused=True) from None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, timeout))
        try:
            sock.connect(where.socket)
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                _remove_if_stale(where)
                raise NotRunning(f"the warm process for {where.store} is starting or gone "
                                 f"(connecting failed: {exc.strerror})") from None
            raise NotRunning(f"connecting to the warm process failed ({exc})") from None
        uid = peer_uid(sock)
        if uid != os.geteuid():
            sys.stderr.write(f"localmem: ignoring the warm process's socket {where.socket}: it is served "
                             f"by uid {uid}, not by this user\n")
            raise NotRunning(f"the socket is served by uid {uid}, not by this user", refused=True)
    except BaseException:
        sock.close()
        raise
    return sock


def ask(store_path: str, op: str, body: dict, *, deadline: float, embedder: str = "",
        timing: dict | None = None) -> object:
    """The warm process's ``result`` for one request (``deadline``: a ``time.monotonic()`` value);
    ``timing["took_ms"]``, when given, is set to how long the warm process took to answer."""
    try:
        where = rundir.where(store_path)
    except rundir.Refused as exc:
        raise NotRunning(str(exc)) from None
    sock = _connect(where, min(CONNECT_TIMEOUT, deadline - time.monotonic()))
    try:
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            wire.send(sock, {**body, "op": op, "embedder": embedder}, wire.MAX_REQUEST_BYTES)
            answer = wire.receive(sock, wire.MAX_ANSWER_BYTES, deadline)
        except (OSError, wire.WireError) as exc:  # killed mid-request, or late
            raise NotRunning(f"the warm process did not answer ({exc})") from None
    finally:
        sock.close()
    if timing is not None and isinstance(answer.get("took_ms"), (int, float)):
        timing["took_ms"] = answer["took_ms"]
    if answer.get("ok") is True:
        return answer.get("result")
    status = answer.get("status")
    raise Failed(status if type(status) is int else 500, str(answer.get("message") or "no message"))


def describe(store_path: str) -> dict:
    """The warm process of ``store_path`` as ``doctor`` reports it: ``state`` is running, stopped,
    off ($LOCALMEM_DAEMON=0 or not supported here) or refused (its folder or socket is not this
    user's: nothing will be started there), with the pid, socket and log, or the reason."""
    if not rundir.enabled():
        return {"state": "off", "reason": "turned off with $LOCALMEM_DAEMON=0" if rundir.supported()
                else "needs Linux (Unix sockets with peer credentials)"}
    try:
        where = rundir.where(store_path)
        rundir.check_folder(where.folder, create=False)
    except FileNotFoundError:
        return {"state": "stopped", "reason": "none has run yet"}
    except rundir.Refused as exc:
        return {"state": "refused", "reason": str(exc)}
    found = {"socket": where.socket, "log": where.log}
    try:
        status = ask(store_path, "status", {}, deadline=time.monotonic() + 2.0)
    except NotRunning as exc:
        return {"state": "refused" if exc.refused else "stopped", "reason": str(exc), **found}
    except Failed as exc:
        return {"state": "stopped", "reason": exc.message, **found}
    return {"state": "running", **(status if isinstance(status, dict) else {}), **found}


def _lock(where: rundir.Where) -> int | None:
    """The lock file's descriptor with the lock taken, or None when a warm process holds it."""
    fd = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def lock_is_free(where: rundir.Where) -> bool:
    """No warm process holds the store's lock (none runs, or it died)."""
    try:
        fd = _lock(where)
    except OSError:
        return False
    if fd is None:
        return False
    os.close(fd)
    return True


def _remove_if_stale(where: rundir.Where) -> None:
    """A socket nobody listens on, with its lock free, is a dead process's: removed under the lock."""
    try:
        fd = _lock(where)
    except OSError:
        return
    if fd is None:
        return  # a warm process holds the lock: it is starting (and replaces the socket itself)
    try:
        rundir.check_socket(where.socket)
        os.unlink(where.socket)
    except (OSError, rundir.Refused):
        pass
    finally:
        os.close(fd)


def start(store_path: str, *, embedder: str = "", idle: float | None = None) -> str:
    """Start the warm process for ``store_path`` in the background unless one runs or is starting;
    returns what was done (for ``-v``). Never waits for it to be ready. ``NotRunning`` when it
    cannot be started here (the folder refused, say)."""
    try:
        where = rundir.where(store_path)
        rundir.check_folder(where.folder, create=True)
        fd = _lock(where)
    except (OSError, rundir.Refused) as exc:
        raise NotRunning(f"the warm process cannot be started: {exc}") from None
    if fd is None:
        return "a warm process is starting or running"
    os.close(fd)  # free again for the process about to start; of racing starters, one takes it
    import subprocess  # only here: the hook pays for it on the start, not on every prompt

    command = [sys.executable, "-m", "localmem.daemon_server", "--db", where.store]
    if embedder:
        command += ["--embedder", embedder]
    if idle is not None:
        command += ["--idle", f"{idle:g}"]
    log = _open_log(where)
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                                   start_new_session=True, cwd="/")
    except OSError as exc:
        raise NotRunning(f"the warm process cannot be started: {exc}") from None
    finally:
        os.close(log)
    return f"started a warm process (pid {process.pid}; log {where.log})"


def _open_log(where: rundir.Where) -> int:
    try:
        if os.lstat(where.log).st_size > MAX_LOG_BYTES:
            os.replace(where.log, where.log + ".1")
    except OSError:
        pass
    return os.open(where.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
