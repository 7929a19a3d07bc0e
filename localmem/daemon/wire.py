"""The protocol on the warm process's socket: one request and one answer per connection, each a
4-byte big-endian length and that many bytes of UTF-8 JSON (an object). Sizes are bounded on
both sides, and every read has a deadline."""

from __future__ import annotations

import struct
import time

from . import plain_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook client imports this)
if TYPE_CHECKING:
    import socket

__all__ = ["MAX_ANSWER_BYTES", "MAX_REQUEST_BYTES", "WireError", "receive", "send"]

MAX_REQUEST_BYTES = 2 * 1024 * 1024  # a hook reads at most 1 MiB of payload, plus its settings
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a CLI 'list --limit' page or a recall of 100 memories
_LENGTH = struct.Struct(">I")


class WireError(Exception):
    """A frame that is malformed, too large, or late."""


def send(sock: socket.socket, message: dict, limit: int) -> None:
    body = plain_json.dumps(message, compact=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(body) > limit:
        raise WireError(f"the message is {len(body)} bytes, more than {limit}")
    sock.sendall(_LENGTH.pack(len(body)) + body)


def receive(sock: socket.socket, limit: int, deadline: float) -> dict:
    """One message, read by ``deadline`` (a ``time.monotonic()`` value)."""
    (size,) = _LENGTH.unpack(_read(sock, _LENGTH.size, deadline))
    if size > limit:
        raise WireError(f"a message of {size} bytes was announced; at most {limit} are read")
    body = _read(sock, size, deadline)
    try:
        message = plain_json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"the message is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise WireError("the message is not a JSON object")
    return message


def _read(sock: socket.socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise WireError("the deadline passed while reading")
        sock.settimeout(wait)
        try:
            chunk = sock.recv(min(left, 1024 * 1024))
        except TimeoutError:  # socket.timeout
            raise WireError("the deadline passed while reading") from None
        if not chunk:
            raise WireError("the connection closed mid-message" if chunks or left < size
                            else "the connection closed before a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
