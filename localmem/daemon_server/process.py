"""The warm process's life: take the store's lock, open and warm the store, listen, answer, and
exit after an idle time, on ``stop``, on SIGTERM/SIGINT, or once the store's file is gone.

The lock (``fcntl.flock`` on the store's lock file, held for the whole life)
makes it the only one for its store: a second process started in a race
finds it taken and exits at once. The socket is bound only once the store is
warm, so a client never waits on a loading model: until then it finds no
socket (or a stale one: removed here first) and answers in-process. Each
connection gets one request and one answer, in a thread; at most
``MAX_CONNECTIONS`` run at once (more are told "busy" and answer in-process),
every read has a deadline, and a peer of another uid is refused before a
byte is read.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from ..daemon import client, rundir, wire
from ..errors import LocalMemError, ValidationError
from .answers import Mismatch, Served, answer

__all__ = ["AlreadyRunning", "serve"]

MAX_CONNECTIONS = 16
REQUEST_DEADLINE = 10.0  # to read one request: a client sends it at once
ACCEPT_POLL = 0.5  # how often the accept loop looks at the clock and the stop flag
SLOW_REQUEST = 1.0  # seconds: an answer slower than this is logged (every answer's time goes to its client)


class AlreadyRunning(LocalMemError):
    """Another warm process holds the store's lock."""


def serve(store_path: str, open_store: Any, *, embedder: str, idle: float, say: Any = print) -> None:
    """Serve ``store_path`` until idle for ``idle`` seconds (blocks). ``open_store()`` makes the
    store; the MCP SDK's server is built in the background once serving, so a new assistant
    window's first answer never waits for the SDK's import, whoever started this process.
    ``AlreadyRunning`` when another process serves it; ``rundir.Refused`` for a folder or socket
    that is not this user's."""
    where = rundir.where(store_path)
    rundir.check_folder(where.folder, create=True)
    lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AlreadyRunning(f"a warm process already serves {where.store}") from None
        os.ftruncate(lock, 0)
        os.write(lock, f"{os.getpid()}\n".encode())
        stopping = threading.Event()
        _on_signals(stopping)
        started = time.monotonic()
        with open_store() as store:
            store.warm_up()
            served = Served(store, embedder, idle, where.log, stopping)
            listener = _listen(where)
            say(f"localmem daemon: pid {os.getpid()} serves {where.store} on {where.socket} "
                f"(warm in {time.monotonic() - started:.1f} s; exits after {idle:g} s idle)")
            threading.Thread(target=served.mcp_lines.prepare, name="localmem-daemon-mcp", daemon=True).start()
            try:
                _accept(listener, served)
            finally:
                _unlisten(listener, where)
                say(f"localmem daemon: pid {os.getpid()} stops ({served.requests} requests answered)")
    finally:
        os.close(lock)  # the lock goes with it


def _on_signals(stopping: threading.Event) -> None:
    def stop(signum: int, frame: Any) -> None:
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)


def _listen(where: rundir.Where) -> socket.socket:
    try:  # a dead process's socket; the lock says no live one has it
        rundir.check_socket(where.socket)
        os.unlink(where.socket)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: no moment when another user could connect
    try:
        listener.bind(where.socket)
    finally:
        os.umask(old)
    os.chmod(where.socket, 0o600)
    listener.listen(64)
    listener.settimeout(ACCEPT_POLL)
    return listener


def _unlisten(listener: socket.socket, where: rundir.Where) -> None:
    try:
        os.unlink(where.socket)  # still ours: the lock keeps any other process from binding the path
    except OSError:
        pass
    listener.close()


def _accept(listener: socket.socket, served: Served) -> None:
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    busy = [0]
    guard = threading.Lock()
    while not served.stopping.is_set():
        with guard:
            idle = busy[0] == 0 and time.monotonic() - served.last_request > served.idle_seconds
        if idle:
            return
        if not os.path.exists(served.store.path):  # deleted (or moved): nothing left to serve
            print(f"localmem daemon: {served.store.path} is gone; exiting", file=sys.stderr)
            return
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        except OSError as exc:
            print(f"localmem daemon: accept failed: {exc}", file=sys.stderr)
            time.sleep(ACCEPT_POLL)
            continue
        if not slots.acquire(blocking=False):
            _reply(conn, {"ok": False, "status": 503, "message": "the warm process is busy"})
            conn.close()
            continue
        with guard:
            busy[0] += 1

        def handle(conn: socket.socket = conn) -> None:
            answered = False
            try:
                answered = _handle(conn, served)
            finally:
                conn.close()
                with guard:
                    busy[0] -= 1
                    served.requests += answered
                    served.last_request = time.monotonic()
                slots.release()

        threading.Thread(target=handle, name="localmem-daemon-request", daemon=True).start()


def _handle(conn: socket.socket, served: Served) -> bool:
    """Answer one connection's request; False when there was none to answer."""
    try:
        uid = client.peer_uid(conn)
    except OSError:
        return False
    if uid != os.geteuid():
        print(f"localmem daemon: refused a connection from uid {uid}", file=sys.stderr)
        return False
    try:
        message = wire.receive(conn, wire.MAX_REQUEST_BYTES, time.monotonic() + REQUEST_DEADLINE)
    except (OSError, wire.WireError) as exc:
        _reply(conn, {"ok": False, "status": 400, "message": f"bad request: {exc}"})
        return False
    started = time.monotonic()
    try:
        reply = {"ok": True, "result": answer(served, message)}
    except ValidationError as exc:
        reply = {"ok": False, "status": 400, "message": exc.message}
    except Mismatch as exc:
        reply = {"ok": False, "status": 409, "message": exc.message}
    except LocalMemError as exc:
        reply = {"ok": False, "status": 500, "message": exc.message}
    except Exception as exc:  # one request's failure never ends the process
        print(f"localmem daemon: {message.get('op')!r} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        reply = {"ok": False, "status": 500, "message": f"{type(exc).__name__}: {exc}"}
    took = time.monotonic() - started
    reply["took_ms"] = round(took * 1000, 1)  # the client's -v says how much of its wait was the answer
    if took > SLOW_REQUEST:
        print(f"localmem daemon: {message.get('op')!r} took {took * 1000:.0f} ms", file=sys.stderr)
    _reply(conn, reply)
    return True


def _reply(conn: socket.socket, reply: dict[str, Any]) -> None:
    try:
        conn.settimeout(REQUEST_DEADLINE)
        wire.send(conn, reply, wire.MAX_ANSWER_BYTES)
    except wire.WireError as exc:
        _reply(conn, {"ok": False, "status": 500, "message": f"the answer is too large ({exc})"})
    except OSError:
        pass  # the client left (its deadline passed): it answered without us
