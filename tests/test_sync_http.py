"""`localmem sync URL`: a peer behind a real `localmem serve`, with its API token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from localmem import MemoryStore
from localmem.replication.push_client import PushClient
from localmem.replication.sync import sync_stores
from localmem.replication.sync_remote import RemoteSide
from localmem.replication.sync_side import StoreSide
from serving import stop, wait_until_healthy

REPO = Path(__file__).resolve().parent.parent
TOKEN = "sync-test-token-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """`localmem serve` on a fresh store b.db, with an API token; yields (url, path)."""
    path = tmp_path / "b.db"
    with MemoryStore(path, embedder="hash") as seed:
        seed.store("a note that lives on the server", tags=["server"])
    with served(path) as url:
        yield url, path


@contextmanager
def served(path: Path, token: str = TOKEN) -> Iterator[str]:
    """`localmem serve` on ``path`` with the API token (a real server process, stopped on exit); yields its URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOCALMEM_API_TOKEN": token}
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(path), "--embedder", "hash",
                                "serve", "--port", str(port), "--log-level", "warning"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, url)
        yield url
    finally:
        stop(process)


def remote_store(url: str):
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


def test_a_server_peer_syncs_both_ways_and_converges(tmp_path, server):
    url, _ = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as local:
        mine = local.store("a note written on the laptop", tags=["laptop"])
        with PushClient(url, token=TOKEN) as client:
            here = StoreSide(local, "laptop")
            summary = sync_stores(here, RemoteSide(client, here.store_id))
            assert (summary.copied_to_peer, summary.copied_to_local) == (1, 1)
            again = sync_stores(here, RemoteSide(client, here.store_id))
            assert (again.copied_to_peer, again.copied_to_local) == (0, 0)
        with remote_store(url) as http:
            assert http.get(f"/memory/{mine}").json()["memory"]["content"] == "a note written on the laptop"
            server_ids = {r["id"] for r in http.get("/memory/by-tag", params={"tags": "server"}).json()["memories"]}
        assert server_ids <= {row[0] for row in local.conn.execute("SELECT id FROM memories")}


def test_conflict_and_delete_against_edit_through_the_server(tmp_path, server):
    url, _ = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as local:
        shared = local.store("the boiler is serviced in March")
        doomed = local.store("the spare key is under the pot")
        local.associate(doomed, shared, "RELATES_TO", 0.6)
        with PushClient(url, token=TOKEN) as client:
            here = StoreSide(local, "laptop")
            sync_stores(here, RemoteSide(client, here.store_id))
            local.update(shared, content="the boiler is serviced in April")
            local.delete(doomed)
            time.sleep(0.01)
            with remote_store(url) as http:
                assert http.patch(f"/memory/{shared}", json={"content": "the boiler is serviced in May"}).status_code == 200
                assert http.patch(f"/memory/{doomed}", json={"content": "the spare key is with the neighbour"}).status_code == 200
            summary = sync_stores(here, RemoteSide(client, here.store_id))
        assert len(summary.conflicts) == 1 and summary.edits_kept_over_deletes == [doomed]
        assert local.get(shared)["content"] == "the boiler is serviced in May"
        assert local.get(doomed)["content"] == "the spare key is with the neighbour"
        assert local.get(summary.conflicts[0]["kept_as"])["content"] == "the boiler is serviced in April"
        # Brought back with its edge (/sync/memory-edges), which went with it when it was deleted here.
        assert local.conn.execute(
            "SELECT s.id, e.type, d.id FROM edges e JOIN memories s ON s.pk = e.src JOIN memories d ON d.pk = e.dst "
            "WHERE s.id = ?", (doomed,)).fetchall() == [(doomed, "RELATES_TO", shared)]


def test_the_sync_routes_want_the_token_and_refuse_hostile_bodies(server):
    url, path = server
    assert httpx.post(f"{url}/sync/hello", json={"peer": "0" * 32}).status_code == 401
    with remote_store(url) as http:
        assert http.post("/sync/hello", json={"peer": "not-a-store"}).status_code == 400
        bad_states = [
            {"states": [{"id": "../../etc", "record": None, "deleted_at": "2026-01-01T00:00:00Z"}]},
            {"states": [{"id": "00000000-0000-4000-8000-000000000001", "record": None, "deleted_at": "yesterday-ish"}]},
            {"states": [{"id": "00000000-0000-4000-8000-000000000001",
                         "record": {"id": "00000000-0000-4000-8000-000000000002", "content": "x"}}]},
            {"states": [{}] * 501},
        ]
        for body in bad_states:
            answer = http.post("/sync/put", json={**body, "peer": "0" * 32})
            assert answer.status_code == 400, body
        answer = http.post("/sync/put-edges", json={"edges": [{"key": ["a", "RELATES_TO", "b"], "strength": 2}],
                                                      "peer": "0" * 32})
        assert answer.status_code == 400
        deep = "[" * 5000 + "]" * 5000
        answer = http.post("/sync/states", content=deep, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400
        # A record the store's own checks refuse is named, and nothing else is written.
        answer = http.post("/sync/put", json={"peer": "0" * 32, "states": [{"id": "00000000-0000-4000-8000-000000000003",
                                                          "record": {"id": "00000000-0000-4000-8000-000000000003",
                                                                     "content": "", "importance": 3}}]})
        assert answer.status_code == 200 and answer.json()["refused"][0][0] == "00000000-0000-4000-8000-000000000003"
        assert http.get("/health").json()["memory_count"] == 1


def test_cli_sync_with_a_url_and_without_the_token(tmp_path, server):
    url, _ = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as local:
        local.store("from the laptop")
    base = [sys.executable, "-m", "localmem", "--db", str(tmp_path / "a.db"), "sync", url, "--json"]
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")}
    env["PYTHONPATH"] = str(REPO)
    refused = subprocess.run(base, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "token" in refused.stderr
    done = subprocess.run([*base, "--token", TOKEN], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["copied_to_peer"], report["copied_to_local"]) == (1, 1)


def test_clock_stamps_travel_unchanged_through_the_server(tmp_path, server):
    """Issue 42, item 1: a memory and an edge keep the stamps they were made with, both ways."""
    url, path = server
    stamps = ("SELECT m.id, c.hlc FROM memories m JOIN memory_changes c ON c.pk = m.pk",
              "SELECT a.id, e.type, b.id, e.hlc FROM edges e JOIN memories a ON a.pk = e.src "
              "JOIN memories b ON b.pk = e.dst")
    with MemoryStore(tmp_path / "a.db", embedder="hash") as local:
        first, second = local.store("the boiler is serviced in March"), local.store("the plumber is Ana")
        local.associate(first, second, "RELATES_TO", 0.6)
        with PushClient(url, token=TOKEN) as client:
            here = StoreSide(local, "laptop")
            sync_stores(here, RemoteSide(client, here.store_id))
        mine = [set(local.conn.execute(query)) for query in stamps]
    with MemoryStore(path, embedder="hash", read_only=True) as served:
        theirs = [set(served.conn.execute(query)) for query in stamps]
    assert mine == theirs and len(mine[0]) == 3 and len(mine[1]) == 1
