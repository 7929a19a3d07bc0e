"""The warm process's side of ``localmem mcp``'s front end (``mcp_server.front``): one line the MCP
client sent in, the lines the MCP SDK's own server answers out.

Each line is answered by the server ``localmem mcp`` runs in-process (``mcp_server.server``'s
``build_server`` on this process's open store, through localmem's stdio transport) in a short
session fed from memory: the client's own ``initialize`` request (the front end keeps it) and
``notifications/initialized`` first, then the line. The answer to the replayed ``initialize`` is
dropped. So every answer, the protocol version negotiated in ``initialize`` included, is the
one the SDK server gives in-process; localmem's tools keep no state between requests of a
session, so replaying the handshake changes nothing else. The SDK is imported on the first
line, here, where it is paid once per process, not once per assistant window.
"""

from __future__ import annotations

import io
import json
import threading
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["INITIALIZED_LINE", "MAX_LINE_BYTES", "McpLines", "answers", "member"]

INITIALIZED_LINE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
MAX_LINE_BYTES = 1024 * 1024  # the front end answers a longer line in-process (the wire's frame is bounded)


def member(line: bytes, name: str) -> Any:
    """A top-level member of the JSON object ``line`` holds (None when it has none, or is no object)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message.get(name) if isinstance(message, dict) else None


def answers(output: bytes, request: bytes) -> bool:
    """Whether ``output`` is the answer (a response or an error, not a request) to ``request``."""
    asked = member(request, "id")
    return asked is not None and member(output, "method") is None and member(output, "id") == asked


class McpLines:
    """The SDK server of one warm process, answering lines: built ahead by ``prepare`` in the
    background once the process serves (or by the first line, should it come first)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._server: Any = None

    @property
    def built(self) -> bool:
        """Whether the SDK's server has been built (``status`` says so)."""
        return self._server is not None

    def prepare(self) -> None:
        """Import the SDK and build its server now (in the background, once the process serves), so
        a new assistant window's first answer does not wait for the import."""
        try:
            self._built()
        except ImportError:
            pass  # no 'mcp' extra: 'localmem mcp' is not used with this installation

    def _built(self) -> Any:
        with self._lock:
            if self._server is None:
                from ..mcp_server.lazy_store import LazyStore
                from ..mcp_server.server import build_server

                store = self._store
                self._server = build_server(LazyStore(lambda: store), warm_up=False, owns_store=False)
            return self._server

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        """``{"lines": [...]}`` for ``{"line": ..., "initialize": ... or None}`` (each line a
        string: its bytes decoded as UTF-8 with ``surrogateescape``, so any bytes survive)."""
        line, initialize = message.get("line"), message.get("initialize")
        if not isinstance(line, str) or not (initialize is None or isinstance(initialize, str)):
            raise ValidationError("'line' must be the client's line and 'initialize' its initialize request or null")
        raw = line.encode("utf-8", "surrogateescape")
        if not raw.endswith(b"\n"):
            raw += b"\n"
        if len(raw) > MAX_LINE_BYTES:
            raise ValidationError(f"'line' is longer than {MAX_LINE_BYTES} bytes")
        replayed = initialize.encode("utf-8", "surrogateescape") if initialize is not None else None
        fed = [replayed.rstrip(b"\n") + b"\n", INITIALIZED_LINE, raw] if replayed is not None else [raw]
        out = _session(self._built(), b"".join(fed))
        lines = out.splitlines(keepends=True)
        if replayed is not None and lines and answers(lines[0], replayed):
            lines = lines[1:]  # the replayed handshake's answer: the client had it already
        return {"lines": [text.decode("utf-8", "surrogateescape") for text in lines]}


def _session(server: Any, given: bytes) -> bytes:
    """What the SDK server writes for ``given`` (whole lines), read as from a client that then
    closes its end: the transport answers every request already sent before it stops."""
    import anyio

    from ..mcp_server.transport import stdio_transport

    stdin, stdout = io.BytesIO(given), io.BytesIO()

    async def serve() -> None:
        async with stdio_transport(stdin, stdout) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
    return stdout.getvalue()
