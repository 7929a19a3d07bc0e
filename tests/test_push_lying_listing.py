"""A server whose listing lies to push's look-up for another store's copy (push_adopt.py).

Found in audit17: before creating again a memory the server lost, push lists the server's memories of its type,
importance and time and compares each with what it would send. A node of the same content whose ``importance`` (or
``confidence``) was not a number (``"high"``, a list, an integer past a float's range) ended the push in a
``ValueError`` / ``TypeError`` / ``OverflowError`` traceback from the comparison, on that push and on every later one;
so did metadata given as a JSON text nested past the recursion limit (``RecursionError``).
Such a node is not the same memory: the memory is created again, as for any copy that differs. The real AutoMem
behind a proxy on loopback that rewrites the listing's answers; the CLI as a subprocess."""

from __future__ import annotations

import json
import threading
import http.client
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from test_pull import run, server  # noqa: F401
from test_push_created_again import ROTA, changed_in_both_then_deleted_there, on_server


@dataclass
class Proxy:
    """The server as push and pull reach it through the proxy (their map is kept per URL); ``lie``: the node
    fields the listing's answers are given, set between runs."""

    url: str
    token: str
    client: Any
    wait_idle: Any
    lie: dict[str, Any] = field(default_factory=dict)


@contextmanager
def lying_listing(upstream: Any) -> Iterator[Proxy]:
    """A proxy on loopback forwarding every request to the server ``upstream``; in ``GET /graph/snapshot``'s
    answer each node's fields named in the proxy's ``lie`` are replaced by its values."""
    target = urlsplit(upstream.url)
    lie: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            conn.request(self.command, self.path, body=body, headers=headers)
            answer = conn.getresponse()
            raw = answer.read()
            if self.path.startswith("/graph/snapshot") and answer.status == 200:
                data = json.loads(raw)
                for node in data.get("nodes", []):
                    node.update(lie)
                raw = json.dumps(data).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            conn.close()

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

        def log_message(self, *args: Any) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield Proxy(f"http://127.0.0.1:{proxy.server_address[1]}", upstream.token, upstream.client,
                    upstream.wait_idle, lie)
    finally:
        proxy.shutdown()
        proxy.server_close()


@pytest.mark.parametrize("lie", [{"importance": "high"}, {"importance": [0.4]}, {"importance": 10 ** 400},
                                 {"confidence": "sure"}, {"metadata": "[" * 100_000 + "]" * 100_000}],
                         ids=["importance-text", "importance-list", "importance-huge", "confidence-text",
                              "metadata-text-nested-deep"])
def test_a_listing_node_with_a_field_that_is_no_number_is_not_the_copy_and_push_goes_on(server, tmp_path, lie):
    with lying_listing(server) as proxy:
        a, b = changed_in_both_then_deleted_there(proxy, tmp_path, ["team", "oncall"], ["team", "oncall"])
        code, first = run(a, "push", proxy.url, proxy.token)
        assert code == 0 and first["memories"]["created"] == 1, first
        server.wait_idle()
        proxy.lie.update(lie)
        code, second = run(b, "push", proxy.url, proxy.token)
    assert "Traceback" not in second["_stderr"], second["_stderr"][-3000:]
    assert code == 0 and second["adopted"] == 0 and second["memories"]["created"] == 1, second
    assert on_server(server).count(ROTA) == 2  # the lying node was not taken for B's copy: B's is sent
