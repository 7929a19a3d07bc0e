"""The stdio transport of the MCP server: every request gets an answer.

The SDK's own stdio transport (``mcp.server.stdio``) parses each line with
pydantic's JSON parser, which refuses a lone surrogate escape (``"\\ud800"``:
valid JSON, and what a JavaScript client sends for such a string), invalid
UTF-8 and deep nesting. The failure is handed to the session as an
exception, which logs it at debug level and drops it: the client waits
forever. A response holding a lone surrogate cannot be serialised either, and
that ends the writer task.

Here valid lines take the SDK's path (``validate_json``). Any other line is
decoded with Python's ``json`` (via ``validation.decode_json``: strict, depth
limited), which keeps lone surrogates, and invalid UTF-8 bytes are read as
lone surrogates too, so the request reaches its tool and the tool's own
validation rejects the text naming the field. A line that still is no
JSON-RPC message gets a JSON-RPC error (parse error or invalid request, with
the request's id when there is one). An outgoing message that cannot be
encoded has its lone surrogates replaced by U+FFFD instead of being lost.

As in the SDK, fd 0 and fd 1 are diverted while serving (stdin to the null
device, stdout to stderr), so stray reads and prints by libraries cannot
touch the protocol; the wire is served from private duplicates.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError

from ..errors import ValidationError
from ..validation import decode_json, shallow_json, strip_non_finite
from .stdio_fds import claimed_stdio

log = logging.getLogger("localmem.mcp")

_SURROGATE = re.compile("[\ud800-\udfff]")
# After the client closes stdin, requests already sent are still answered
# (``printf '...' | localmem mcp``), waiting at most this long for them.
DRAIN_SECONDS = 60.0


class _Pending:
    """Ids of requests forwarded to the server and not answered yet."""

    def __init__(self) -> None:
        self.ids: Counter[Any] = Counter()
        self._changed = anyio.Event()

    def forwarded(self, message: SessionMessage) -> None:
        if isinstance(message.message, types.JSONRPCRequest):
            self.ids[message.message.id] += 1

    def answered(self, message: SessionMessage) -> None:
        inner = message.message
        if isinstance(inner, (types.JSONRPCResponse, types.JSONRPCError)) and self.ids[inner.id] > 0:
            self.ids[inner.id] -= 1
            if not self.ids[inner.id]:
                del self.ids[inner.id]
            self._changed.set()
            self._changed = anyio.Event()

    async def drained(self) -> None:
        while +self.ids:
            await self._changed.wait()


def _error(request_id: Any, code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)))


def _request_id(value: Any) -> str | int | None:
    """The id of a would-be request, when it is one JSON-RPC allows."""
    if isinstance(value, dict):
        found = value.get("id")
        if isinstance(found, (str, int)) and not isinstance(found, bool):
            return found
    return None


def _top_level(text: str) -> Any:
    """The message's top-level members, its nested values as None; None if even that is no JSON."""
    try:
        return decode_json(shallow_json(text), "message")
    except ValidationError:
        return None


def _problem(value: Any, exc: PydanticValidationError) -> str:
    """What is wrong, told for the kind of message it meant to be (the errors of that union branch)."""
    kind = "JSONRPCRequest"
    if isinstance(value, dict) and "method" not in value:
        kind = "JSONRPCError" if "error" in value else "JSONRPCResponse"
    elif isinstance(value, dict) and "id" not in value:
        kind = "JSONRPCNotification"
    errors = [e for e in exc.errors() if e["loc"][:1] == (kind,)] or exc.errors()
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error["loc"][1:]) or "message"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def decode_line(raw: bytes) -> tuple[SessionMessage | None, SessionMessage | None]:
    """One line from the client as ``(message for the server, answer for the client)``.

    At most one of the two is set; both are None for a blank line and for a
    broken notification or response (which JSON-RPC never answers).
    """
    if not raw.strip():
        return None, None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(raw, by_name=False)), None
    except PydanticValidationError:
        pass
    # Invalid UTF-8 bytes become lone surrogates, which the tools reject by field name.
    text = raw.decode("utf-8", "surrogateescape")
    try:
        value = decode_json(text, "message")
    except ValidationError as exc:
        log.warning("unreadable message from the client: %s", exc.message)
        # A request nested too deep to parse still has its id at the top: answer that id,
        # or the client waits for an answer that never comes.
        request_id = _request_id(_top_level(text))
        if request_id is not None:
            return None, _error(request_id, types.INVALID_REQUEST, f"Invalid request: {exc.message}")
        return None, _error(None, types.PARSE_ERROR, f"Parse error: {exc.message}")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(value, by_name=False)), None
    except PydanticValidationError as exc:
        problem = _problem(value, exc)
    request_id = _request_id(value)
    if isinstance(value, dict) and request_id is None and ("method" in value or "result" in value
                                                           or "error" in value):
        log.warning("dropped an invalid notification or response from the client: %s", problem)
        return None, None
    return None, _error(request_id, types.INVALID_REQUEST, f"Invalid request: {problem}")


def _printable(value: Any) -> Any:
    """``value`` with every surrogate code point in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def encode_message(message: SessionMessage) -> bytes:
    """One outgoing line; a message UTF-8 cannot carry as it is loses its lone surrogates."""
    try:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:
        # Python mode: the JSON mode of pydantic fails on the same surrogates (in keys).
        data = message.message.model_dump(mode="python", by_alias=True, exclude_unset=True)
        text = json.dumps(strip_non_finite(_printable(data)), ensure_ascii=False, allow_nan=False,
                          separators=(",", ":"), default=str)
    return (text + "\n").encode("utf-8")


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                         MemoryObjectSendStream[SessionMessage]]]:
    """``(read_stream, write_stream)`` for ``Server.run``, over stdio (or the given binary files).

    On end of input the read stream stays open until the requests already
    forwarded are answered (at most ``DRAIN_SECONDS``): the server stops
    serving when it closes. The server closes the write stream when it is
    done; the writer then ends once the last answer is out.
    """
    given = stdin is not None and stdout is not None
    with _given(stdin, stdout) if given else claimed_stdio() as (wire_in, wire_out):
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
        reader_answers = outgoing.clone()  # the reader's own answers share the one writer
        reading = anyio.CancelScope()
        pending = _Pending()

        async def read_lines() -> None:
            with reading:
                async with incoming_send, reader_answers:
                    while True:
                        # Abandoned on cancel: a thread blocked on the pipe must not hold up the exit.
                        raw = await anyio.to_thread.run_sync(wire_in.readline, abandon_on_cancel=True)
                        if not raw:
                            with anyio.move_on_after(DRAIN_SECONDS):
                                await pending.drained()
                            break
                        message, answer = decode_line(raw)
                        if message is not None:
                            pending.forwarded(message)
                            await incoming_send.send(message)
                        if answer is not None:
                            await reader_answers.send(answer)

        async def write_lines() -> None:
            async with outgoing_receive:
                async for message in outgoing_receive:
                    data = encode_message(message)
                    await anyio.to_thread.run_sync(_write, wire_out, data)
                    pending.answered(message)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_lines)
            try:
                yield incoming, outgoing
            finally:
                await outgoing.aclose()
                reading.cancel()


def _write(wire: BinaryIO, data: bytes) -> None:
    wire.write(data)
    wire.flush()


@contextmanager
def _given(stdin: BinaryIO | None, stdout: BinaryIO | None) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    assert stdin is not None and stdout is not None
    yield stdin, stdout
