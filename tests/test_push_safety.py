"""``localmem push`` keeps the token and the memories where the user sent them: plain http
only to this machine (unless --insecure), no credentials in the URL, no redirects followed
(so the token reaches no other server), a refused token stops the push; bad options are exit 2."""

from __future__ import annotations

import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from localmem import MemoryStore
from remote_servers import CLEARED, ROOT


def cli(*args: str, token: str | None = "secret-token") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["PYTHONPATH"] = str(ROOT)
    if token is not None:
        env["AUTOMEM_API_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "localmem", *args], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("A memory that must not leave this machine by accident", tags=["private"])
    return path


@contextmanager
def recording_server(status: int, location: str | None = None) -> Iterator[tuple[str, list[dict]]]:
    """A loopback HTTP server that records each request's headers and answers ``status``."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            seen.append({"path": self.path, "authorization": self.headers.get("Authorization")})
            body = b'{"status": "error", "message": "nope"}'
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("url, fragment", [
    ("http://192.0.2.10:8001", "refusing plain http://"),  # never contacted: refused before any request
    ("http://automem.example.com", "refusing plain http://"),
    ("https://user:pass@automem.example.com", "must not carry credentials"),
    ("ftp://automem.example.com", "http:// or https://"),
    ("https://automem.example.com/?x=1", "query"),
])
def test_unsafe_urls_are_refused_before_anything_is_sent(db, url, fragment):
    done = cli("--db", str(db), "push", url)
    assert done.returncode == 2 and fragment in done.stderr, done.stderr


@pytest.mark.parametrize("option", [["--batch-size", "0"], ["--batch-size", "501"], ["--retries", "-1"],
                                    ["--timeout", "0"]])
def test_bad_options_are_usage_errors(db, option):
    done = cli("--db", str(db), "push", "http://127.0.0.1:9", *option)
    assert done.returncode == 2 and option[0] in done.stderr, done.stderr


def test_no_database_is_an_error(tmp_path):
    done = cli("--db", str(tmp_path / "missing.db"), "push", "http://127.0.0.1:9")
    assert done.returncode == 1 and "no database" in done.stderr


def test_redirects_are_not_followed_and_the_token_goes_nowhere_else(db):
    with recording_server(200) as (elsewhere, elsewhere_seen):
        with recording_server(302, location=f"{elsewhere}/health") as (url, seen):
            done = cli("--db", str(db), "push", url)
    assert done.returncode == 1 and "redirected" in done.stderr and elsewhere in done.stderr, done.stderr
    assert seen and seen[0]["authorization"] == "Bearer secret-token"  # to the URL given
    assert elsewhere_seen == []  # and to nobody else


def test_a_refused_token_stops_the_push(db):
    with recording_server(401) as (url, seen):
        done = cli("--db", str(db), "push", url, "--token", "wrong")
    assert done.returncode == 1 and "refused the token" in done.stderr, done.stderr
    assert len(seen) == 1  # no retries with a token the server refused


def test_an_unreachable_server_is_retried_then_reported(db):
    with recording_server(503) as (url, seen):
        done = cli("--db", str(db), "push", url, "--retries", "2")
    assert done.returncode == 1 and "503" in done.stderr, done.stderr
    assert len(seen) == 3  # the first try and two retries, with backoff between them


# -- issue 33: a server that answers badly (items 9, 11, 12, 13) -------------------------------------


@contextmanager
def raw_server(answer) -> Iterator[str]:
    """A loopback TCP server whose handler ``answer(connection)`` writes whatever bytes it likes."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(30)
            try:
                self.request.recv(65536)  # the request (small: GET /health)
                answer(self.request)
            except OSError:
                pass  # the client hung up: what the tests want

    class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def drip(data: bytes, every: float = 0.1):
    def answer(connection) -> None:
        for byte in data:
            connection.sendall(bytes([byte]))
            time.sleep(every)
    return answer


HEALTHY = b'{"status": "healthy"}' + b" " * 400


@pytest.mark.parametrize("answer", [
    drip(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(HEALTHY) + HEALTHY),  # the body drips
    drip(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n"),  # the headers drip
])
def test_a_server_that_drips_its_answer_is_given_up_on_after_the_timeout(db, answer):
    """Issue 33 item 11: the timeout was per socket read, so a byte every 0.1 s kept push waiting."""
    with raw_server(answer) as url:
        started = time.monotonic()
        done = cli("--db", str(db), "push", url, "--timeout", "2", "--retries", "0")
        took = time.monotonic() - started
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "within 2 s" in done.stderr, done.stderr
    assert took < 20, took  # Python's start-up and the store's opening included


def declared_gigabyte(connection) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{"
                       % (1 << 30))
    time.sleep(5)


def streamed_past_the_limit(connection) -> None:
    from localmem.replication.push_client import MAX_ANSWER_BYTES

    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * (1 << 20)
    for _ in range(MAX_ANSWER_BYTES // len(chunk) + 2):  # just past the limit, no chunk ends it
        connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))


@pytest.mark.parametrize("answer", [declared_gigabyte, streamed_past_the_limit])
def test_an_answer_larger_than_the_limit_is_refused_not_read(db, answer):
    """Issue 33 item 12: push read any answer whole (a 1 GiB body took 2 GiB of memory)."""
    with raw_server(answer) as url:
        done = cli("--db", str(db), "push", url, "--timeout", "30", "--retries", "0")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "GET /health" in done.stderr and "localmem push reads" in done.stderr, done.stderr


@contextmanager
def automem_like(snapshot: object) -> Iterator[tuple[str, list[dict]]]:
    """A loopback stand-in for AutoMem: the first create's answer is lost (the connection is
    dropped after the request is read), later ones are answered; ``GET /graph/snapshot``
    answers ``snapshot``; anything else succeeds."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _json(self, value: object) -> None:
            body = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length)) if length else None
            seen.append({"method": self.command, "path": self.path})
            route = self.path.split("?")[0]
            if route == "/health":
                self._json({"status": "healthy"})
            elif route == "/graph/snapshot":
                self._json(snapshot)
            elif route == "/memory/batch":
                if sum(1 for s in seen if s["path"] == "/memory/batch") == 1:
                    self.close_connection = True  # the create landed (say); its answer is lost
                    return
                self._json({"status": "success",
                            "memory_ids": [f"remote-{len(seen)}-{i}" for i in range(len(payload["memories"]))]})
            else:
                self._json({"status": "success"})

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"])
def test_a_lost_create_of_a_memory_at_the_calendars_end_is_looked_up_and_sent(tmp_path, stamp):
    """Issue 33 item 9: the look-up reached a day before the pending memory's time, which for
    0001-01-01 raised OverflowError; every later push died the same way."""
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("A memory from the start of the calendar", timestamp=stamp)
    with automem_like({"nodes": []}) as (url, seen):
        done = cli("--db", str(path), "push", url, "--retries", "1", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["memories"]["created"] == 1
    lookups = [s["path"] for s in seen if s["path"].startswith("/graph/snapshot")]
    assert lookups and f"since={stamp[:4]}-" in lookups[0], lookups


@pytest.mark.parametrize("snapshot", [
    {"nodes": "not a list"}, {"nodes": [1, 2]}, {"nodes": [{"metadata": {}}]}, {"nodes": {"id": "x"}},
    {"nodes": [{"id": ["x"], "metadata": {}}]}, ["nodes"],
])
def test_a_malformed_graph_snapshot_is_said_not_a_traceback(db, snapshot):
    """Issue 33 item 13: nodes that were not memories raised AttributeError while reconciling."""
    with automem_like(snapshot) as (url, seen):
        done = cli("--db", str(db), "push", url, "--retries", "1", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert any("GET /graph/snapshot" in w for w in report["warnings"]), report["warnings"]
    assert report["memories"]["created"] == 1  # sent again (it may be there twice, and the warning says so)
