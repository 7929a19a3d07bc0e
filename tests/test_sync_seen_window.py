"""A server peer's seen-join checked in its own transaction (issue 42 follow-up; docs/sync.md, "What a
deletion had seen"). A merge joins the sync_seen summaries only where a side still holds the version the sync
left there. On a file that is checked inside the join's transaction; a server peer's ``POST /sync/seen`` took
no expected version, so the client read the memory just before the join, and a delete made on the server
between that read and the join counted as having seen what the sync merged. Now the route takes the expected
versions (the server says so in ``/sync/hello``'s ``features``); a server without the feature gets the read
before the join, and the sync says the window is open (``seen_window``, and ``localmem sync -v``)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.replication.push_client import PushClient
from localmem.replication.sync import sync_stores
from localmem.replication.sync_remote import RemoteSide
from localmem.replication.sync_side import StoreSide
from test_sync_http import REPO, TOKEN, remote_store, server  # noqa: F401 (a fixture)
from test_sync_writers import conflict_on_the_server

SEEN_EXPECT = "seen-expect"


class ServerDeletesBeforeTheJoin(RemoteSide):
    """A server peer on which another client deletes one memory while this sync's ``POST /sync/seen`` for it
    is on its way: after every read this sync makes of it, before the server joins. The requests are the real
    client's; only the other client's delete is put in the gap."""

    def __init__(self, client: PushClient, local_id: str, url: str, memory_id: str):
        super().__init__(client, local_id)
        self.url, self.memory_id = url, memory_id

    def _call(self, route: str, **body: Any) -> dict[str, Any]:
        if route == "seen" and self.memory_id in {entry[0] for entry in body["seen"]}:
            with remote_store(self.url) as http:
                assert http.delete(f"/memory/{self.memory_id}").status_code == 200
            self.memory_id = None
        return super()._call(route, **body)


def test_a_delete_on_the_server_between_the_read_and_the_join_has_not_seen_what_the_sync_merged(
        tmp_path, server):  # noqa: F811
    url, _ = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "c.db", embedder="hash") as c, \
            PushClient(url, token=TOKEN) as client:
        memory = conflict_on_the_server(a, c, url, client)
        here = StoreSide(c, "c")
        racing = ServerDeletesBeforeTheJoin(client, here.store_id, url, memory)
        summary = sync_stores(here, racing, allow_deletes=10)
        assert racing.memory_id is None, "the sync joined no summary of the memory on the server"
        assert summary.refused == [], summary
        # The server's delete was made before it took a's edit in: that edit was concurrent with the
        # delete and survives it (docs/sync.md); on the old route the delete counted as having seen it.
        here = StoreSide(a, "a")
        kept = sync_stores(here, RemoteSide(client, here.store_id), allow_deletes=10)
        assert kept.edits_kept_over_deletes == [memory], kept
        with remote_store(url) as http:
            assert http.get(f"/memory/{memory}").json()["memory"]["content"] == "The standup moved to 9:45"
        assert summary.seen_window is None and kept.seen_window is None  # the window is closed: nothing to say


def server_seen(path, memory: str) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {row[0] for row in db.execute("SELECT hlc FROM sync_seen WHERE id = ?", (memory,))}


def test_the_server_joins_what_the_sync_merged_when_nothing_changed_meanwhile(tmp_path, server):  # noqa: F811
    url, path = server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "c.db", embedder="hash") as c, \
            PushClient(url, token=TOKEN) as client:
        memory = conflict_on_the_server(a, c, url, client)
        a_edit = a.conn.execute("SELECT c.hlc FROM memory_changes c JOIN memories m ON m.pk = c.pk WHERE m.id = ?",
                                (memory,)).fetchone()[0]
        assert a_edit not in server_seen(path, memory)
        here = StoreSide(c, "c")
        sync_stores(here, RemoteSide(client, here.store_id))
        assert a_edit in server_seen(path, memory)  # joined, inside the server's transaction


def test_the_seen_route_takes_expected_versions_and_refuses_bad_ones(server):  # noqa: F811
    url, _ = server
    memory = "00000000-0000-4000-8000-0000000000a1"
    stamp = f"{1000:015d}-{0:010d}-{7:032x}"
    entry = [memory, [[f"{7:032x}", stamp]]]
    with remote_store(url) as http:
        assert SEEN_EXPECT in http.post("/sync/hello", json={"peer": "0" * 32}).json()["features"]
        for expect in ("absent", [[memory]], [[memory, "yesterday"]], [["../x", "absent"]], []):
            answer = http.post("/sync/seen", json={"seen": [entry], "expect": expect})
            assert answer.status_code == 400 and "expect" in answer.json()["message"], (expect, answer.text)
        # Held at another version than expected (nothing is held): not joined; as expected: joined.
        later = f"{1000:015d}-{0:010d}-{8:032x}"
        assert http.post("/sync/seen", json={"seen": [[memory, [[f"{8:032x}", later]]]],
                                             "expect": [[memory, "2026-01-01T00:00:00+00:00|"]]}).status_code == 200
        assert http.post("/sync/seen", json={"seen": [entry], "expect": [[memory, "absent"]]}).status_code == 200
    assert server_seen(server[1], memory) == {stamp}


def test_an_older_client_joins_on_a_new_server_as_before(server):  # noqa: F811
    """A client from before the feature sends ``seen`` alone (it read the memory itself): joined as before."""
    url, path = server
    memory = "00000000-0000-4000-8000-0000000000a2"
    stamp = f"{1000:015d}-{0:010d}-{7:032x}"
    with remote_store(url) as http:
        answer = http.post("/sync/seen", json={"seen": [[memory, [[f"{7:032x}", stamp]]]]})
        assert answer.status_code == 200, answer.text
    assert server_seen(path, memory) == {stamp}


class BeforeSeenExpect:
    """The HTTP contract of a server from before the feature, around today's app: ``/sync/hello`` names no
    features and ``/sync/seen`` refuses an ``expect`` field (its body check refused unknown fields)."""

    def __init__(self, app: Callable[..., Any]):
        self.app = app
        self.seen_bodies: list[dict[str, Any]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in ("/sync/hello", "/sync/seen"):
            return await self.app(scope, receive, send)
        raw, more = b"", True
        while more:
            message = await receive()
            raw, more = raw + message.get("body", b""), message.get("more_body", False)
        if scope["path"] == "/sync/seen":
            self.seen_bodies.append(json.loads(raw))
            if "expect" in self.seen_bodies[-1]:
                return await _answer(send, 400, {"status": "error", "message": "unknown field 'expect'; allowed: seen"})

        async def replay():
            return {"type": "http.request", "body": raw, "more_body": False}
        if scope["path"] == "/sync/seen":
            return await self.app(scope, replay, send)
        sent: list[dict[str, Any]] = []

        async def keep(message):
            sent.append(message)
        await self.app(scope, replay, keep)
        hello = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
        hello.pop("features", None)
        return await _answer(send, sent[0]["status"], hello)


async def _answer(send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


@pytest.fixture
def older_server(tmp_path):
    """Today's app on a real uvicorn (in a thread), behind ``BeforeSeenExpect``; yields (url, served, wrapper)."""
    from localmem.http.app import create_app
    from localmem.http.server import uvicorn_config
    from serving import in_thread

    with MemoryStore(tmp_path / "server.db", embedder="hash") as served:
        older = BeforeSeenExpect(create_app(served, token=TOKEN))
        with in_thread(lambda port: uvicorn_config(older, port=port, log_level="warning", log_config=None)) as url:
            yield url, served, older


def test_an_older_server_gets_the_read_before_the_join_and_the_sync_says_the_window_is_open(tmp_path, older_server):
    url, served, older = older_server
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "c.db", embedder="hash") as c, \
            PushClient(url, token=TOKEN) as client:
        memory = conflict_on_the_server(a, c, url, client)
        here = StoreSide(c, "c")
        summary = sync_stores(here, RemoteSide(client, here.store_id))
        assert summary.refused == [] and "open" in (summary.seen_window or ""), summary
        assert older.seen_bodies and all(set(body) == {"seen"} for body in older.seen_bodies)
        a_edit = a.conn.execute("SELECT c.hlc FROM memory_changes c JOIN memories m ON m.pk = c.pk WHERE m.id = ?",
                                (memory,)).fetchone()[0]
        assert a_edit in {row[0] for row in served.conn.execute("SELECT hlc FROM sync_seen WHERE id = ?", (memory,))}


def run_sync(db, peer: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOCALMEM_API_TOKEN": TOKEN}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "sync", peer,
                           *flags], env=env, capture_output=True, text=True, timeout=120)


def test_sync_v_says_how_the_join_is_checked_on_each_kind_of_peer(tmp_path, server, older_server):  # noqa: F811
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "f.db", embedder="hash") as f:
        a.store("a note to sync"), f.store("a note on the file peer")
    lines = {}
    for name, peer in (("file", str(tmp_path / "f.db")), ("server", server[0]), ("older", older_server[0])):
        done = run_sync(tmp_path / "a.db", peer, "-v")
        assert done.returncode == 0, done.stderr
        lines[name] = [line for line in done.stderr.splitlines() if "seen" in line]
        quiet = run_sync(tmp_path / "a.db", peer)
        assert quiet.returncode == 0 and "seen" not in quiet.stderr, quiet.stderr
    assert len(lines["file"]) == len(lines["server"]) == len(lines["older"]) == 1, lines
    assert "open" not in lines["file"][0] and "open" not in lines["server"][0], lines
    assert "open" in lines["older"][0] and older_server[0] in lines["older"][0], lines
    report = json.loads(run_sync(tmp_path / "a.db", older_server[0], "--json").stdout)
    assert "open" in report["seen_window"]
