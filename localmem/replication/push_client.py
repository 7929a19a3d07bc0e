"""The HTTP client of ``localmem push``: one server, its token, retries with backoff.

Standard library only (``http.client``): one kept-alive connection, JSON in
and out. What it guarantees:

* the token goes only to the URL given: it is sent as ``Authorization:
  Bearer`` to that scheme, host and port, and redirects are never followed
  (a 3xx is an error naming where the server pointed);
* plain ``http://`` to a host that is not loopback is refused unless the
  caller says ``insecure`` (the token and every memory would cross the
  network in clear);
* every request is bounded: its whole exchange (connecting, sending,
  the answer's headers and body) within ``timeout`` seconds, however slowly
  the server drips it, and its answer to at most ``MAX_ANSWER_BYTES`` (a
  larger one is refused unread, with an error saying so), and parsed only
  when it holds few enough JSON values, nested shallowly enough
  (``parse_bounded``); a run may also be given one deadline for all its
  requests (``total_seconds``);
* timeouts, dropped connections, 429 and 5xx answers are retried a bounded
  number of times with exponential backoff. A request that is not
  idempotent (a create) is never repeated blindly: ``Uncertain`` tells the
  caller that it may or may not have landed, so the caller can look first.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import socket
import functools
import io
import math
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from ..errors import LocalMemError, ValidationError
from ..loopback import is_loopback

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 8.0
# The largest answer read: a lookup snapshot of many memories fits, a hostile stream does not.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
# Parsing costs far more than the bytes (an empty list is 3 bytes of JSON and 56 of Python):
# an answer is parsed only when it holds at most one value per this many bytes of the answer
# cap (4 million values under the default 256 MiB: AutoMem's listing of ~100k memories), and
# is nested at most this deep.
BYTES_PER_ANSWER_VALUE = 64
MAX_ANSWER_DEPTH = 512  # deeper than any record a store keeps (a record too deep is skipped by name)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKETS = re.compile(rb"[\[\]{}]")
READ_CHUNK = 1 << 16
# Errors that mean the request may not have reached the server, or its answer was lost.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    socket.timeout, TimeoutError, ConnectionError, http.client.HTTPException, OSError)


class RemoteError(LocalMemError):
    """The server refused a request, or could not be reached after the retries."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class Uncertain(RemoteError):
    """A non-idempotent request failed in a way that leaves unknown whether it was applied."""


class AnswerTooLarge(RemoteError):
    """The server's answer was larger than ``MAX_ANSWER_BYTES``; it was not read."""


class AnswerTimeout(TimeoutError):
    """The whole exchange took longer than the client's ``timeout`` (a transient error)."""


def read_answer(answer: http.client.HTTPResponse, what: str, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The body of ``answer``, read in chunks; ``AnswerTooLarge`` past ``limit`` bytes (or when
    its Content-Length says it would be), so no answer costs more memory than that."""
    declared = (answer.getheader("Content-Length") or "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise AnswerTooLarge(f"{what}: the answer is {int(declared):,} bytes, more than the "
                             f"{limit:,} localmem push reads; refused unread")
    body = bytearray()
    while True:
        piece = answer.read(min(READ_CHUNK, limit + 1 - len(body)))
        if not piece:
            return bytes(body)
        body += piece
        if len(body) > limit:
            raise AnswerTooLarge(f"{what}: the answer is more than the {limit:,} bytes localmem "
                                 "push reads; refused")


def parse_bounded(raw: bytes, what: str, max_elements: int,
                  max_depth: int = MAX_ANSWER_DEPTH) -> Any:
    """``raw`` parsed as JSON when it holds at most ``max_elements`` values nested at most
    ``max_depth`` deep (``AnswerTooLarge`` otherwise, before parsing); text that is not JSON
    is returned as text. Both are counted on the bytes with strings blanked out, in C-speed
    passes, so what parsing would cost is known before it is paid."""
    bare = _JSON_STRING.sub(b'""', raw)
    elements = bare.count(b",") + bare.count(b"[") + bare.count(b"{") + 1
    if elements > max_elements:
        raise AnswerTooLarge(f"{what}: the answer holds about {elements:,} JSON values, more than the "
                             f"{max_elements:,} localmem parses; refused")
    depth = deepest = 0
    for match in _JSON_BRACKETS.finditer(bare):
        depth += 1 if match.group() in (b"[", b"{") else -1
        if depth > deepest:
            deepest = depth
            if deepest > max_depth:
                raise AnswerTooLarge(f"{what}: the answer is nested more than {max_depth} levels deep; refused")
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text) if text.strip() else None
    except (ValueError, RecursionError):
        return text


@dataclass
class Response:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """The server's error message (AutoMem and localmem both say ``message``)."""
        if isinstance(self.body, Mapping):
            for key in ("message", "description", "error", "detail"):
                if isinstance(self.body.get(key), str):
                    return self.body[key]
        return str(self.body)[:300] if self.body not in (None, "") else f"HTTP {self.status}"


def normalize_url(url: str, *, insecure: bool = False) -> str:
    """The server's base URL as ``scheme://host[:port][/path]``; ``ValidationError`` if unusable."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationError("URL is required (such as https://automem.example.com)")
    # A space or a control character would go on the request line as written (http.client refuses some, later).
    if any(char.isspace() or not char.isprintable() for char in url.strip()):
        raise ValidationError(f"URL must not hold spaces or control characters: {url!r}")
    try:
        parts = urlsplit(url.strip())
        hostname = parts.hostname  # a bracketed host that is no IPv6 address raises only here
    except ValueError as exc:  # urllib's own words: "Invalid IPv6 URL", "'zz' does not appear to be ..."
        raise ValidationError(f"URL is not a usable URL ({exc}): {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValidationError(f"URL must start with http:// or https://, got {url!r}")
    if not hostname:
        raise ValidationError(f"URL has no host: {url!r}")
    if parts.username or parts.password:
        raise ValidationError("URL must not carry credentials; give the token with --token or $AUTOMEM_API_TOKEN")
    if parts.query or parts.fragment:
        raise ValidationError(f"URL must not have a query or fragment: {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValidationError(f"URL has a bad port: {url!r}") from None
    if scheme == "http" and not is_loopback(hostname) and not insecure:
        raise ValidationError(
            f"refusing plain http:// to {hostname}, which is not this machine: the token and "
            "every memory would cross the network unencrypted. Use https://, or --insecure "
            "if the network is trusted")
    host = hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    netloc = host if port in (None, default) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


class PushClient:
    """JSON requests to one server, with its token, bounded retries and backoff."""

    def __init__(self, url: str, *, token: str | None = None, admin_token: str | None = None,
                 insecure: bool = False, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF,
                 sleep: Callable[[float], None] = time.sleep,
                 max_answer: int = MAX_ANSWER_BYTES, total_seconds: float | None = None) -> None:
        self.url = normalize_url(url, insecure=insecure)
        parts = urlsplit(self.url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port
        self.prefix = parts.path
        self.token = token.strip() if token and token.strip() else None
        self.admin_token = admin_token.strip() if admin_token and admin_token.strip() else None
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self.sleep = sleep
        self.max_answer = max(1, max_answer)
        self.max_values = max(10_000, self.max_answer // BYTES_PER_ANSWER_VALUE)
        self.retried = 0  # requests repeated after a transient failure, for the summary
        # One deadline for every request of a run (sync, pull): a server answering each request
        # in time, forever, still ends it.
        self.total_seconds = total_seconds
        self.give_up_at = None if total_seconds is None else time.monotonic() + total_seconds
        self._conn: http.client.HTTPConnection | None = None

    # -- connection ---------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.scheme == "https":
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "PushClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------

    def path(self, route: str, query: Mapping[str, Any] | None = None) -> str:
        text = self.prefix + route
        if query:
            text += "?" + urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)
        return text

    @staticmethod
    def quoted(memory_id: str) -> str:
        return quote(memory_id, safe="")

    def _once(self, method: str, path: str, body: Any, admin: bool) -> Response:
        headers: dict[str, str | bytes] = {"Accept": "application/json"}
        # The tokens' UTF-8 bytes, as localmem serve compares them (and curl sends them): http.client
        # would encode a str header as Latin-1, which no non-ASCII token matches.
        if self.token:
            headers["Authorization"] = b"Bearer " + self.token.encode("utf-8")
        if admin and self.admin_token:
            headers["X-Admin-Token"] = self.admin_token.encode("utf-8")
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = self._connection()
        # A per-read socket timeout bounds no exchange (a server sending one byte at a time
        # never lets one read wait that long): every step gets only what is left of one deadline.
        deadline = time.monotonic() + self.timeout
        try:
            if conn.sock is None:
                conn.timeout = self.timeout
                conn.connect()
            _DeadlineSocket.limit(conn.sock, deadline)  # sending: sendall's timeout is its total
            conn.response_class = functools.partial(_DeadlineResponse, deadline=deadline)
            conn.request(method, path, body=data, headers=headers)
            answer = conn.getresponse()
            raw = read_answer(answer, f"{method} {path}", self.max_answer)
        except BaseException as exc:
            self.close()  # the connection's state is unknown: start a new one
            if isinstance(exc, (socket.timeout, TimeoutError)) and time.monotonic() >= deadline:
                raise AnswerTimeout(f"no complete answer within {self.timeout:g} s") from exc
            raise
        if answer.getheader("Connection", "").lower() == "close" or answer.will_close:
            self.close()
        parsed = parse_bounded(raw, f"{method} {path}", self.max_values)
        if 300 <= answer.status < 400:
            where = answer.getheader("Location") or "elsewhere"
            raise RemoteError(
                f"{method} {path} was redirected ({answer.status}) to {where}; localmem does not follow "
                "redirects (the token goes only to the URL given): push to that URL instead",
                status=answer.status)
        return Response(answer.status, parsed)

    def request(self, method: str, route: str, *, body: Any = None,
                query: Mapping[str, Any] | None = None, idempotent: bool = True,
                admin: bool = False) -> Response:
        """Send one request; retry transient failures. Error statuses are returned, not raised,
        except 401/403 (``RemoteError``: nothing else will work) and, for a request that is
        not idempotent, any failure whose outcome is unknown (``Uncertain``)."""
        path = self.path(route, query)
        attempt = 0
        while True:
            if self.give_up_at is not None and time.monotonic() >= self.give_up_at:
                raise RemoteError(f"{method} {self.url}{route}: this run's total deadline of "
                                  f"{self.total_seconds:g} s passed; stopped (run it again to go on)")
            try:
                response = self._once(method, path, body, admin)
            except AnswerTooLarge as exc:
                if not idempotent:  # refused unread: whether the create landed is unknown
                    raise Uncertain(str(exc)) from exc
                raise
            except RemoteError:
                raise
            except TRANSIENT_ERRORS as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if not idempotent:
                    raise Uncertain(f"{method} {path}: {reason}") from exc
                if attempt >= self.retries:
                    raise RemoteError(f"{method} {self.url}{route} failed after {attempt + 1} "
                                      f"attempts: {reason}") from exc
            else:
                if response.status in (401, 403) and not (self.admin_token if admin else self.token):
                    raise RemoteError(f"{method} {self.url}{route}: the server asks for an API token "
                                      f"({response.status}: {response.message()}) and none was given: pass "
                                      "--token or set the token's environment variable",
                                      status=response.status, body=response.body)
                if response.status in (401, 403):
                    raise RemoteError(f"{method} {self.url}{route}: the server refused the "
                                      f"{'admin ' if admin else ''}token ({response.status}: "
                                      f"{response.message()})", status=response.status, body=response.body)
                if response.status not in RETRY_STATUSES:
                    return response
                if not idempotent:
                    raise Uncertain(f"{method} {path}: HTTP {response.status} ({response.message()})",
                                    status=response.status, body=response.body)
                if attempt >= self.retries:
                    return response
            attempt += 1
            self.retried += 1
            self.pause(attempt)

    def pause(self, attempt: int) -> None:
        """Exponential backoff with jitter: about backoff, 2×, 4× ... capped at ``MAX_BACKOFF``."""
        delay = min(MAX_BACKOFF, self.backoff * 2 ** (attempt - 1))
        self.sleep(delay * random.uniform(0.75, 1.25))

    def get(self, route: str, **query: Any) -> Response:
        return self.request("GET", route, query=query)



class _DeadlineSocket(io.RawIOBase):
    """What an answer is read through: the socket's own reader, each read waiting only for
    what is left until ``deadline``."""

    def __init__(self, plain: Any, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.plain = plain  # closing it releases the socket, as http.client expects
        self.sock = sock
        self.deadline = deadline

    @staticmethod
    def limit(sock: Any, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or math.isnan(left):
            raise AnswerTimeout("the deadline passed")
        sock.settimeout(left)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.limit(self.sock, self.deadline)
        return self.plain.readinto(buffer)

    def close(self) -> None:
        self.plain.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An ``HTTPResponse`` whose status line, headers and body are read by a deadline."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineSocket(self.fp.detach(), sock, deadline))
