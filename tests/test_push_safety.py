"""``localmem push`` keeps the token and the memories where the user sent them: plain http
only to this machine (unless --insecure), no credentials in the URL, no redirects followed
(so the token reaches no other server), a refused token stops the push; bad options are exit 2."""

from __future__ import annotations

import http.server
import os
import socketserver
import subprocess
import sys
import threading
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
