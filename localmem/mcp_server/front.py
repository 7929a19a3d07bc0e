"""``localmem mcp``'s front end: when the store's warm process runs, the client's lines go there and
its answers come back, and the MCP SDK is never imported here.

A new assistant window starts ``localmem mcp`` and waits for its first answer; importing the
MCP SDK (pydantic, anyio, the SDK's types) is most of that wait. So the command asks first
whether the store's warm process runs (serving the embedder this command would use). If none
does, ``serve`` returns None before reading a byte of stdin, and the caller runs the SDK server
in-process exactly as before. If one does, this module speaks the stdio side itself:

* each line the client sends goes to the warm process (``mcp_line``), which answers it with the
  SDK server ``localmem mcp`` would run here, on its open store (``daemon_server.mcp_lines``);
  the client's ``initialize`` request is kept and sent along, so the answers are the ones the
  SDK server gives, protocol version included. Lines are answered in worker threads, so a slow
  tool call does not hold up a ``ping``;
* when the warm process is gone (killed, stopped, idle exit, or a failed answer), the line it did
  not answer and every later one go to the SDK server started here, in-process, after a replay of
  the client's ``initialize`` (its answer dropped: the client has it). It says so on stderr. A
  request the warm process ran but whose answer was lost is run again here.

As the SDK's transport does, fd 0 and fd 1 are diverted (to the null device and to stderr) while
serving, so stray reads and prints cannot touch the protocol. Standard library only.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ..daemon import client, rundir
from ..daemon_server.mcp_lines import INITIALIZED_LINE, MAX_LINE_BYTES, answers, member
from .stdio_fds import claimed_stdio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["serve"]

WORKERS = 8  # lines answered at once through the warm process
LINE_DEADLINE = 120.0  # seconds: a tool call over a large store, a bulk store
STATUS_DEADLINE = 1.0
# A line longer than mcp_lines.MAX_LINE_BYTES (and every later one) is answered in-process.


def serve(db: str, embedder: str | None) -> int | None:
    """Serve the client through the store's warm process (the exit code), or None, having read
    nothing, when no warm process for this store and embedder answers."""
    choice = client.embedder_choice(embedder)
    if db == ":memory:" or not rundir.enabled() or not _sdk_installed():
        return None  # (without the SDK, the usual path says what to install, as before)
    try:
        status = client.ask(db, "status", {}, deadline=time.monotonic() + STATUS_DEADLINE)
    except (client.NotRunning, client.Failed):
        return None
    if not isinstance(status, dict) or status.get("embedder_choice") != choice:
        return None  # it serves another embedder than this command asks for
    with claimed_stdio() as (wire_in, wire_out):
        _Front(db, embedder, choice, wire_in.fileno(), wire_out.fileno()).run()
    return 0


def _sdk_installed() -> bool:
    """Whether this process could answer in-process once the warm process is gone."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


class _Front:
    def __init__(self, db: str, embedder: str | None, choice: str, wire_in: int, wire_out: int) -> None:
        self.db, self.embedder, self.choice = db, embedder, choice
        self.initialize: bytes | None = None
        self.write_lock = threading.Lock()
        self.feed_lock = threading.Lock()  # orders the lines fed to the in-process server
        self.feed: int | None = None  # the in-process server's stdin (a pipe), once the warm process is gone
        self.local: threading.Thread | None = None
        self.slots = threading.BoundedSemaphore(WORKERS)
        self.workers: list[threading.Thread] = []
        self.wire_in, self.wire_out = wire_in, wire_out

    def run(self) -> None:
        pending = b""
        while True:
            chunk = os.read(self.wire_in, 65536)
            if not chunk:
                break
            pending += chunk
            while True:
                end = pending.find(b"\n")
                if end < 0:
                    break
                line, pending = pending[:end + 1], pending[end + 1:]
                self.take(line)
            if len(pending) > MAX_LINE_BYTES:  # a line too long for the wire: the rest goes in-process
                self.fall_back([pending], f"a line longer than {MAX_LINE_BYTES} bytes")
                pending = b""
        if pending:
            self.take(pending)
        for worker in self.workers:
            worker.join()
        with self.feed_lock:
            if self.feed is not None:
                os.close(self.feed)  # end of input for the in-process server: it answers what it has
                self.feed = -1
        if self.local is not None:
            self.local.join()

    def take(self, line: bytes) -> None:
        if not line.strip():
            return
        with self.feed_lock:
            if self.feed is not None:
                try:
                    _write_all(self.feed, line)
                except BrokenPipeError:  # the in-process server could not start (it said why)
                    pass
                return
        if self.initialize is None and member(line, "method") == "initialize":
            # Answered at once (the client waits for it before anything else), then kept to replay.
            # Kept only after: had the warm process failed it, the in-process server got it as it came.
            self.forward(line, replay=None)
            self.initialize = line
            return
        self.workers = [w for w in self.workers if w.is_alive()]
        self.slots.acquire()
        worker = threading.Thread(target=self.forward_in_slot, args=(line, self.initialize), daemon=True,
                                  name="localmem-mcp-line")
        self.workers.append(worker)
        worker.start()

    def forward_in_slot(self, line: bytes, replay: bytes | None) -> None:
        try:
            self.forward(line, replay)
        finally:
            self.slots.release()

    def forward(self, line: bytes, replay: bytes | None) -> None:
        body = {"line": line.decode("utf-8", "surrogateescape"),
                "initialize": replay.decode("utf-8", "surrogateescape") if replay is not None else None}
        try:
            result = client.ask(self.db, "mcp_line", body, deadline=time.monotonic() + LINE_DEADLINE,
                                embedder=self.choice)
        except client.NotRunning as exc:
            self.fall_back([line], str(exc))
            return
        except client.Failed as exc:
            self.fall_back([line], f"it answered {exc.status}: {exc.message}")
            return
        lines = result.get("lines") if isinstance(result, dict) else None
        if not isinstance(lines, list) or not all(isinstance(text, str) for text in lines):
            self.fall_back([line], "its answer was malformed")
            return
        self.write(b"".join(text.encode("utf-8", "surrogateescape") for text in lines))

    def write(self, data: bytes) -> None:
        if data:
            with self.write_lock:
                _write_all(self.wire_out, data)

    def fall_back(self, lines: list[bytes], reason: str) -> None:
        """Feed ``lines`` (and every later line) to an SDK server started here."""
        with self.feed_lock:
            if self.feed is None:
                sys.stderr.write(f"localmem mcp: the warm process no longer answers ({reason}); "
                                 "answering in-process from now on\n")
                sys.stderr.flush()
                feed_out, self.feed = os.pipe()
                replayed = self.initialize
                self.local = threading.Thread(target=self.serve_here, args=(feed_out, replayed),
                                              name="localmem-mcp-local")
                self.local.start()
                if replayed is not None:
                    lines = [replayed.rstrip(b"\n") + b"\n" + INITIALIZED_LINE, *lines]
            try:
                for line in lines:  # as they came: the start of a long line, the last line without its newline
                    _write_all(self.feed, line)
            except BrokenPipeError:  # the in-process server could not start (it said why)
                pass

    def serve_here(self, feed_out: int, replayed: bytes | None) -> None:
        """The SDK server, as ``localmem mcp`` runs it without a warm process, on the fed lines."""
        try:
            import anyio

            from .__main__ import store_factory
            from .lazy_store import LazyStore
            from .server import DISCONNECT_WAIT_SECONDS, build_server, exit_while_warming
            from .transport import stdio_transport
        except ImportError as exc:
            sys.stderr.write(f"localmem mcp: cannot answer in-process: {exc}\n")
            os.close(feed_out)
            return
        lazy = LazyStore(store_factory(self.db, self.embedder))
        lazy.start_warm_up()
        server = build_server(lazy, close_wait=0)
        out = _Answers(self, replayed)

        async def serve() -> None:
            with os.fdopen(feed_out, "rb") as stdin:
                async with stdio_transport(stdin, out) as (read_stream, write_stream):  # type: ignore[arg-type]
                    await server.run(read_stream, write_stream, server.create_initialization_options())

        try:
            anyio.run(serve)
        finally:  # as run_stdio: a client gone while the model loads does not wait for it
            if not lazy.close(wait=DISCONNECT_WAIT_SECONDS):
                exit_while_warming(0)


class _Answers:
    """The in-process server's output: to the client, without the answer to the replayed
    ``initialize`` (the first line, when there was one to replay)."""

    def __init__(self, front: _Front, replayed: bytes | None) -> None:
        self.front = front
        self.replayed = replayed  # None once the first line is out

    def write(self, data: bytes) -> int:
        replayed, self.replayed = self.replayed, None
        if replayed is None or not answers(data, replayed):
            self.front.write(data)
        return len(data)

    def flush(self) -> None:
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
