"""A sync or pull against a server that lies, stalls or floods (issue 42, item 7).

Real HTTP servers (``http.server`` in a thread) answer crafted bodies; the CLI runs as a
subprocess. On f49a3c6 endless empty pages looped forever, an answer's parse cost was
bounded only by its bytes, a lone surrogate in one AutoMem record failed every pull with a
traceback, and a server asking for a token said it had "refused the token" none was sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest

from localmem import MemoryStore
from localmem.replication.push_client import AnswerTooLarge, PushClient, RemoteError

REPO = Path(__file__).resolve().parent.parent
STORE_ID = "ab" * 16

Answer = Callable[[str, str, dict], tuple[int, Any]]  # (method, path, body) -> (status, JSON or bytes)


@contextmanager
def crafted(answer: Answer) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            status, payload = answer(method, self.path, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._reply("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._reply("POST")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def cli(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def local(tmp_path: Path) -> Path:
    path = tmp_path / "local.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store_many([{"content": f"local note {n}"} for n in range(5)])
    return path


def test_endless_empty_pages_stop_the_sync_with_an_error(local):
    def answer(method: str, path: str, body: dict) -> tuple[int, Any]:
        if path == "/sync/hello":
            return 200, {"status": "success", "store_id": STORE_ID, "clock": 2 ** 60, "sent_to": 0}
        if path == "/sync/page":  # always one step on, never anything in it
            return 200, {"status": "success", "items": [], "last": body["after"] + 1}
        return 200, {"status": "success", "states": [], "refused": []}

    with crafted(answer) as url:
        run = cli(local, "sync", url, "--token", "t", timeout=120)
    assert run.returncode == 1 and "empty in a row" in run.stderr, run.stderr
    with MemoryStore(local, embedder="hash", read_only=True) as store:
        assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 5


def test_a_page_ending_past_the_servers_own_clock_is_refused(local):
    def answer(method: str, path: str, body: dict) -> tuple[int, Any]:
        if path == "/sync/hello":
            return 200, {"status": "success", "store_id": STORE_ID, "clock": 10, "sent_to": 0}
        if path == "/sync/page":
            return 200, {"status": "success", "items": [], "last": 10 ** 12}
        return 200, {"status": "success", "states": [], "refused": []}

    with crafted(answer) as url:
        run = cli(local, "sync", url, "--token", "t")
    assert run.returncode == 1 and "outside" in run.stderr and "Traceback" not in run.stderr


def test_a_server_asking_for_a_token_none_was_given_says_so(local):
    with crafted(lambda method, path, body: (401, {"status": "error", "message": "Unauthorized"})) as url:
        run = cli(local, "sync", url)
    assert run.returncode == 1
    assert "asks for an API token" in run.stderr and "none was given" in run.stderr
    assert "refused the token" not in run.stderr


def test_an_answer_with_too_many_values_is_refused_before_parsing():
    flood = b"[" + b",".join([b"[]"] * 40_000) + b"]"  # 80 KB of JSON, 40k Python lists
    with crafted(lambda method, path, body: (200, flood)) as url:
        with PushClient(url, max_answer=1024 * 1024) as client:  # 16k values at most
            with pytest.raises(AnswerTooLarge, match="JSON values"):
                client.get("/anything")
        with PushClient(url) as client:  # the default cap reads it
            assert len(client.get("/anything").body) == 40_000


def test_an_answer_nested_too_deep_is_refused_before_parsing():
    deep = b"[" * 513 + b"]" * 513
    with crafted(lambda method, path, body: (200, deep)) as url, PushClient(url) as client:
        with pytest.raises(AnswerTooLarge, match="nested more than 512"):
            client.get("/anything")
    text = b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\""}'
    with crafted(lambda method, path, body: (200, text)) as url, PushClient(url) as client:
        assert client.get("/anything").body["a"].startswith("[[[")  # brackets inside strings are text


def test_a_run_stops_at_its_total_deadline():
    with crafted(lambda method, path, body: (200, {"ok": True})) as url:
        with PushClient(url, total_seconds=0.05) as client:
            assert client.get("/one").ok
            time.sleep(0.1)
            with pytest.raises(RemoteError, match="total deadline of 0.05 s passed"):
                client.get("/two")


GOOD = "5f0c3e1a-1111-4222-8333-944455556666"


def test_a_pulled_record_with_a_lone_surrogate_is_skipped_with_a_reason(tmp_path):
    listing = ('{"nodes": [{"id": "%s", "content": "A good memory"},'
               ' {"id": "bad-text", "content": "broken \\ud800 text"},'
               ' {"id": "bad-meta", "content": "fine", "metadata": {"k\\udc00": 1}}],'
               ' "edges": [], "stats": {"total_nodes": 3}}' % GOOD).encode()

    def answer(method: str, path: str, body: dict) -> tuple[int, Any]:
        if path.startswith("/health"):
            return 200, {"status": "healthy"}
        if path.startswith("/graph/snapshot"):
            return 200, listing
        return 404, {"status": "error"}

    db = tmp_path / "pulled.db"
    with crafted(answer) as url:
        for _ in range(2):  # on f49a3c6 every pull failed
            run = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json")
            assert "Traceback" not in run.stderr, run.stderr
            report = json.loads(run.stdout)
            reasons = {item["id"]: item["reason"] for item in report["skipped"]}
            assert "not valid Unicode" in reasons["'bad-text'"] and "content" in reasons["'bad-text'"]
            assert "not valid Unicode" in reasons["'bad-meta'"] and "metadata" in reasons["'bad-meta'"]
    with MemoryStore(db, embedder="hash", read_only=True) as store:
        assert [row[0] for row in store.conn.execute("SELECT content FROM memories")] == ["A good memory"]
