"""uvicorn's h11 protocol with read deadlines (uvicorn has none for headers or bodies).

uvicorn cancels its keep-alive timer on the first byte a client sends, and
then waits for the rest of the request without limit: a client that sends a
header line every few seconds (or a body one byte at a time) holds its
connection open forever, and a few hundred such clients exhaust the
server's file descriptors. Here the headers of a request must arrive within
``header_timeout`` seconds of the connection, or on a kept-alive connection of
the request's first byte (until then uvicorn's keep-alive timeout applies),
and its body within ``body_timeout`` seconds of its headers; otherwise the
server answers 408 (when it has not answered yet) and closes. Time spent by
the application is never limited.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import ConfigError

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_HEADER_TIMEOUT", "guarded_protocol"]

DEFAULT_HEADER_TIMEOUT = 5.0
DEFAULT_BODY_TIMEOUT = 60.0


def _error_response(code: int, reason: bytes, message: str) -> bytes:
    """A closing response with the application's JSON error body, written below the app."""
    body = json.dumps({"status": "error", "code": code, "message": message},
                      separators=(",", ":")).encode()
    return (b"HTTP/1.1 " + str(code).encode() + b" " + reason + b"\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _timeout_response(message: str) -> bytes:
    return _error_response(408, b"Request Timeout", message)


class DeadlineH11Protocol(H11Protocol):
    """H11Protocol plus one deadline for whichever part of a request is being read."""

    header_timeout = DEFAULT_HEADER_TIMEOUT
    body_timeout = DEFAULT_BODY_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: str | None = None  # "headers", "body" or None (nothing to read)
        self._deadline: asyncio.TimerHandle | None = None
        self._bytes_in_phase = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow_state()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._phase == "headers" and self._deadline is None:
            self._arm()  # the first byte of a request on a kept-alive connection
        self._bytes_in_phase = True
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            self._answer_and_close(self._head_too_large_response())
            return
        super().data_received(data)
        self._follow_state()

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the request line and headers being read outgrow the limit.

        h11 enforces its limit only while a head is incomplete, so a long URL that
        happened to arrive in one read would pass and the same URL split over two
        reads would not; measuring the head here gives one answer for both.
        """
        limit = self.config.h11_max_incomplete_event_size
        if not limit:
            return False
        pending = self.conn.trailing_data[0] + data
        end = pending.find(b"\r\n\r\n")
        return (len(pending) if end < 0 else end + 4) > limit

    def _head_too_large_response(self) -> bytes:
        return _error_response(
            431, b"Request Header Fields Too Large",
            f"The request's URL and headers are over "
            f"{self.config.h11_max_incomplete_event_size:,} bytes, the limit; "
            f"the connection is closed")

    def _answer_and_close(self, response: bytes) -> None:
        self._disarm()
        self.transport.write(response)
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next request cycle
        # Waiting for the next request: uvicorn's keep-alive timer runs until its first byte.
        self._follow_state(arm_headers=False)

    def send_400_response(self, msg: str) -> None:
        """h11 could not parse the request: say why in the app's JSON error form, not
        uvicorn's plain "Invalid HTTP request received." (431 when the URL and headers
        outgrew the limit before they were complete)."""
        limit = self.config.h11_max_incomplete_event_size
        buffered = len(self.conn.trailing_data[0])
        if self.conn.their_state is h11.ERROR and limit and buffered > limit:
            # A pipelined request's head, read by h11 while this protocol did not look.
            response = self._head_too_large_response()
        else:
            response = _error_response(400, b"Bad Request", "The request is not valid HTTP/1.1")
        self._answer_and_close(response)

    # -- the deadline ------------------------------------------------------

    def _follow_state(self, *, arm_headers: bool = True) -> None:
        """Arm a deadline when the client starts owing headers or a body; keep it while it does."""
        state = self.conn.their_state
        phase = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return  # still the same part: the deadline keeps running (a slow sender gains nothing)
        self._disarm()
        self._phase = phase
        self._bytes_in_phase = False
        if phase == "body" or (phase == "headers" and arm_headers):
            self._arm()

    def _arm(self) -> None:
        if self.transport.is_closing():
            return
        delay = self.header_timeout if self._phase == "headers" else self.body_timeout
        self._deadline = self.loop.call_later(delay, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._phase == "headers":
            answer = self._bytes_in_phase  # a connection that sent nothing is simply closed
            message = f"The request headers did not arrive within {self.header_timeout:g} s"
        else:
            answer = self.cycle is not None and not self.cycle.response_started
            message = f"The request body did not arrive within {self.body_timeout:g} s"
        if answer:
            self.transport.write(_timeout_response(message + "; the connection is closed."))
        self.logger.info("%s; closing the connection", message)
        self.transport.close()


def guarded_protocol(header_timeout: float = DEFAULT_HEADER_TIMEOUT,
                     body_timeout: float = DEFAULT_BODY_TIMEOUT) -> type[H11Protocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` with these deadlines (seconds)."""
    for name, value in (("header_timeout", header_timeout), ("body_timeout", body_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 86400:
            raise ConfigError(f"{name} must be a number of seconds above 0, not {value!r}")
    return type("GuardedH11Protocol", (DeadlineH11Protocol,),
                {"header_timeout": float(header_timeout), "body_timeout": float(body_timeout)})
