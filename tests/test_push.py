"""``localmem push``: a store copied into the real AutoMem and into ``localmem serve``, checked
on each server through its own routes (GET /memory/{id}, GET /recall with the pushed embedding,
GET /memories/{id}/related, GET /memory/by-tag).

Each test uses its own tag, so the servers (started once per session) need no wiping.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from array import array
from pathlib import Path
from typing import Any

import apsw
import pytest

from localmem import MemoryStore
from remote_servers import CLEARED, ROOT, Server, automem, localmem_serve

SERVER_METADATA = ("entities", "enrichment", "localmem_id")


@pytest.fixture(scope="session")
def automem_server(tmp_path_factory):
    with automem(tmp_path_factory.mktemp("automem-state")) as server:
        yield server


@pytest.fixture(scope="session")
def localmem_server(tmp_path_factory):
    with localmem_serve(tmp_path_factory.mktemp("localmem-serve") / "server.db") as server:
        yield server


@pytest.fixture(params=["automem", "localmem"])
def server(request) -> Server:
    return request.getfixturevalue(f"{request.param}_server")


def push_env(server: Server, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return {**env, "PYTHONPATH": str(ROOT), "AUTOMEM_API_TOKEN": server.token, **extra}


def push(db: Path, server: Server, *options: str, **env: str) -> tuple[int, dict[str, Any]]:
    """``localmem --db DB push URL --json OPTIONS`` as a user runs it; (exit code, summary)."""
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "push", server.url, "--json",
                           *options], env=push_env(server, **env), capture_output=True, text=True, timeout=300)
    try:
        summary = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        raise AssertionError(f"not JSON: {done.stdout[-2000:]} / {done.stderr[-2000:]}") from None
    return done.returncode, summary | {"_stderr": done.stderr}


def embedding_of(db: Path, memory_id: str) -> list[float]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        blob = conn.execute("SELECT e.embedding FROM memory_embeddings AS e JOIN memories AS m ON m.pk = e.pk "
                            "WHERE m.id = ?", (memory_id,)).fetchone()[0]
    finally:
        conn.close()
    values = array("f")
    values.frombytes(blob)
    return list(values)


def on_server(server: Server, tag: str) -> dict[str, dict[str, Any]]:
    """The server's memories with ``tag`` (GET /memory/by-tag), by the local id each carries."""
    server.wait_idle()
    found: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        page = server.client.get("/memory/by-tag", params={"tags": tag, "limit": 200, "offset": offset}).json()
        for memory in page["memories"]:
            metadata = memory["metadata"] if isinstance(memory["metadata"], dict) else json.loads(memory["metadata"])
            local_id = metadata["localmem_id"]
            assert local_id not in found, f"{local_id} is on the server twice"
            found[local_id] = memory
        if not page["has_more"]:
            return found
        offset += 200


def related(server: Server, remote_id: str, relation: str) -> set[str]:
    body = server.client.get(f"/memories/{remote_id}/related",
                             params={"relationship_types": relation, "limit": 50}).json()
    return {m["id"] for m in body["related_memories"]}


def assert_same_memory(local: dict[str, Any], remote: dict[str, Any], remote_ids: dict[str, str]) -> None:
    """Every pushed field arrived; only what the server adds by itself is extra."""
    for name in ("content", "type", "importance", "confidence"):
        assert remote[name] == local[name], (name, local[name], remote[name])
    for name in ("timestamp", "t_valid", "t_invalid"):
        mine, theirs = local[name], remote.get(name)
        assert (mine is None and theirs is None) or (
            theirs is not None and _time(mine) == _time(theirs)), (name, mine, theirs)
    extra = [t for t in remote["tags"] if t not in local["tags"]]
    assert all(t.startswith("entity:") for t in extra) and set(local["tags"]) <= set(remote["tags"])
    metadata = remote["metadata"] if isinstance(remote["metadata"], dict) else json.loads(remote["metadata"])
    expected = dict(local["metadata"])
    if "superseded_by" in expected:
        expected["superseded_by"] = remote_ids[expected["superseded_by"]]  # the server's id
    assert {k: v for k, v in metadata.items() if k not in SERVER_METADATA} == expected
    assert metadata["localmem_id"] == local["id"]


def _time(value: str):
    from datetime import datetime
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def build_store(path: Path, tag: str) -> dict[str, str]:
    """Memories with tags and metadata, edges of several types, a supersession chain,
    an update and a deletion (made before the push)."""
    ids: dict[str, str] = {}
    with MemoryStore(path, embedder="hash") as store:
        ids["a"] = store.store("Chose PostgreSQL for the Alpha project's primary database",
                               tags=[tag, "project:alpha", "database"], type="Decision", importance=0.9,
                               confidence=0.8, timestamp="2024-03-01T10:00:00+00:00",
                               metadata={"source": "meeting", "nested": {"k": [1, 2]}})
        ids["b"] = store.store("The Alpha API signs its JWT tokens with RS256",
                               tags=[tag, "project:alpha", "auth"], type="Pattern", importance=0.6,
                               timestamp="2024-03-02T10:00:00+00:00", t_invalid="2030-01-01T00:00:00+00:00")
        ids["c"] = store.store("Deployments go through the staging cluster first",
                               tags=[tag, "ops"], metadata={"team": "infra"})
        ids["d"] = store.store("A temporary note that gets deleted", tags=[tag])
        ids["e"] = store.store("Dark mode is preferred in every editor", tags=[tag, "preference:ui"],
                               type="Preference", importance=0.7)
        ids["v1"] = store.store("We use MongoDB for the main database", tags=[tag, "database"],
                                timestamp="2023-01-01T00:00:00+00:00")
        ids["v2"] = store.supersede(ids["v1"], "Moved the main database from MongoDB to PostgreSQL",
                                    tags=[tag, "database"], reason="transactions")["memory_id"]
        ids["v3"] = store.supersede(ids["v2"], "The main database is PostgreSQL 16 on managed hosting",
                                    tags=[tag, "database"], relation="EVOLVED_INTO", reason="ops")["memory_id"]
        store.associate(ids["a"], ids["b"], "RELATES_TO", 0.4)
        store.associate(ids["a"], ids["c"], "LEADS_TO", 0.7)
        store.associate(ids["b"], ids["a"], "PART_OF", 0.6, role="component")
        store.associate(ids["e"], ids["c"], "CONTRADICTS", 0.3, reason="style", resolution="ask")
        store.update(ids["c"], content="Deployments go through the staging cluster, then a canary",
                     importance=0.75)
        store.delete(ids["d"])
    return ids


def local_records(path: Path, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    with MemoryStore(path, embedder="none") as store:
        return {key: store.get(memory_id) for key, memory_id in ids.items() if key != "d"}


def test_push_copies_everything_once_then_only_the_changes(server, tmp_path):
    tag = f"push-{uuid.uuid4().hex[:8]}"
    db = tmp_path / "memory.db"
    ids = build_store(db, tag)

    code, summary = push(db, server, "--verify")
    assert code == 0, json.dumps(summary, indent=1, default=str)[-6000:]  # the whole summary, to diagnose
    assert summary["server"] == server.kind
    assert summary["memories"]["created"] == 7 and summary["memories"]["failed"] == 0
    assert summary["edges"]["created"] == 6  # four associations and the two supersession edges
    assert summary["embeddings"]["sent"] == 7  # both servers store 384-dimension vectors, as hash does
    assert summary["verify"]["ok"], summary["verify"]

    found = on_server(server, tag)
    records = local_records(db, ids)
    assert set(found) == {r["id"] for r in records.values()}  # everything, exactly once, not the deleted one
    remote = {key: found[record["id"]]["id"] for key, record in records.items()}
    remote_ids = {records[key]["id"]: rid for key, rid in remote.items()}
    for key, record in records.items():
        memory = server.client.get(f"/memory/{remote[key]}").json()["memory"]
        assert_same_memory(record, memory, remote_ids)
    assert records["c"]["content"].endswith("then a canary")  # the update made before the push

    # The pushed embedding: recalling by it finds the memory, at cosine 1.
    vector = embedding_of(db, ids["a"])
    hits = server.client.get("/recall", params={"embedding": ",".join(map(repr, vector)), "limit": 3}).json()
    top = hits["results"][0]
    assert (top.get("id") or top["memory"]["id"]) == remote["a"]
    assert top["score_components"]["vector"] == pytest.approx(1.0, abs=1e-4)

    # Edges of each type, and the supersession chain v1 -> v2 -> v3.
    assert remote["b"] in related(server, remote["a"], "RELATES_TO")
    assert remote["c"] in related(server, remote["a"], "LEADS_TO")
    assert remote["a"] in related(server, remote["b"], "PART_OF")
    assert remote["c"] in related(server, remote["e"], "CONTRADICTS")
    assert related(server, remote["v1"], "INVALIDATED_BY") == {remote["v2"]}
    assert remote["v3"] in related(server, remote["v2"], "EVOLVED_INTO")

    # Nothing changed: nothing is sent.
    code, again = push(db, server)
    assert code == 0
    assert {k: v for k, v in again["memories"].items() if v} == {}
    assert {k: v for k, v in again["edges"].items() if v} == {}

    # Local changes: only they are sent.
    with MemoryStore(db, embedder="hash") as store:
        store.update(ids["b"], content="The Alpha API signs its JWT tokens with ES256", tags=[tag, "auth"])
        store.delete(ids["e"])
        ids["f"] = store.store("Every service exports Prometheus metrics", tags=[tag, "ops"])
        store.associate(ids["f"], ids["a"], "EXEMPLIFIES", 0.5, pattern_type="observability")
        store.dissociate(ids["a"], ids["b"], "RELATES_TO")
        store.recall("database")  # reading changes nothing that is pushed
    code, third = push(db, server)
    assert code == 0, third
    assert third["memories"] == {"created": 1, "updated": 1, "unchanged": 0, "deleted": 1,
                                 "skipped": 0, "failed": 0}
    assert third["edges"]["created"] == 1 and third["edges"]["failed"] == 0
    if server.kind == "localmem":  # DELETE /associate
        assert third["edges"]["deleted"] == 1
        assert remote["b"] not in related(server, remote["a"], "RELATES_TO")
    else:  # AutoMem has no route to delete an edge: said, and the edge stays there
        assert third["edges"]["skipped"] == 1 and third["edges"]["deleted"] == 0
        assert any("no route to delete an edge" in s["reason"] for s in third["skipped"])
        assert remote["b"] in related(server, remote["a"], "RELATES_TO")
    found = on_server(server, tag)
    records = local_records(db, {k: v for k, v in ids.items() if k != "e"})
    assert set(found) == {r["id"] for r in records.values()}
    assert server.client.get(f"/memory/{remote['e']}").status_code == 404
    updated = server.client.get(f"/memory/{remote['b']}").json()["memory"]
    assert updated["content"].endswith("ES256") and "project:alpha" not in updated["tags"]
    new_remote = found[ids["f"]]["id"]
    assert remote["a"] in related(server, new_remote, "EXEMPLIFIES")


def bulk_store(path: Path, tag: str, count: int) -> None:
    """``count`` memories in threads of ten, each thread linked by RELATES_TO edges."""
    with MemoryStore(path, embedder="hash") as store:
        ids = store.store_many([
            {"content": f"Bulk memory {i}: the {['alpha', 'beta', 'gamma'][i % 3]} service handles job {i}",
             "tags": [tag, f"group:{i % 4}"], "metadata": {"n": i}, "importance": round(0.3 + (i % 7) / 10, 2),
             "timestamp": f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"} for i in range(count)])
        for i in range(1, count):
            if i % 10:
                store.associate(ids[i - 1], ids[i], "RELATES_TO", 0.5)


def server_state(server: Server, tag: str) -> list[tuple[Any, ...]]:
    """What the server holds for ``tag``, without its ids: contents, tags, metadata, edges."""
    found = on_server(server, tag)
    content_of = {m["id"]: m["content"] for m in found.values()}
    state = []
    for memory in found.values():
        metadata = memory["metadata"] if isinstance(memory["metadata"], dict) else json.loads(memory["metadata"])
        neighbours = sorted(content_of.get(i, "?") for i in related(server, memory["id"], "RELATES_TO"))
        state.append((memory["content"], sorted(t for t in memory["tags"] if t != tag and not t.startswith("entity:")),
                      metadata["n"], memory["importance"], tuple(neighbours)))
    return sorted(state)


def pending_count(db: Path) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT count(*) FROM push_ids WHERE remote_id IS NOT NULL").fetchone()[0]
    except apsw.SQLError:
        return 0
    finally:
        conn.close()


def test_a_killed_push_run_again_ends_as_an_uninterrupted_one(server, tmp_path):
    count = 30
    tags = {name: f"{name}-{uuid.uuid4().hex[:8]}" for name in ("whole", "crashed", "killed")}
    for name, tag in tags.items():
        bulk_store(tmp_path / f"{name}.db", tag, count)
    assert push(tmp_path / "whole.db", server, "--batch-size", "8")[0] == 0

    # Stopped right after the server answered a create, before the answer was recorded.
    crashed = tmp_path / "crashed.db"
    code, _ = push(crashed, server, "--batch-size", "8", LOCALMEM_PUSH_TEST_CRASH_AFTER="11")
    assert code == 70
    code, resumed = push(crashed, server, "--batch-size", "8")
    assert code == 0, resumed
    assert resumed["recovered"] >= 1  # found on the server, not sent again
    assert resumed["memories"]["created"] + resumed["recovered"] <= count

    # Killed (SIGKILL) at whatever point it had reached.
    killed = tmp_path / "killed.db"
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(killed), "push", server.url,
                                "--batch-size", "4"], env=push_env(server),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while pending_count(killed) < 6 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    code, resumed = push(killed, server)
    assert code == 0, resumed

    expected = server_state(server, tags["whole"])
    assert len(expected) == count
    assert server_state(server, tags["crashed"]) == expected
    assert server_state(server, tags["killed"]) == expected
    for name in ("crashed", "killed"):  # and a further push has nothing left to send
        code, again = push(tmp_path / f"{name}.db", server, "--verify")
        assert code == 0 and again["memories"]["created"] == 0 and again["verify"]["ok"], json.dumps(again)[:3000]


def test_dry_run_and_tags_scope(server, tmp_path):
    tag = f"scope-{uuid.uuid4().hex[:8]}"
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        work = store.store("Work item for the scoped push", tags=[tag, "work:alpha"])
        private = store.store("A private note that stays here", tags=[tag, "private"])
        store.associate(work, private, "RELATES_TO", 0.5)
    code, plan = push(db, server, "--dry-run")
    assert code == 0 and plan["dry_run"] and plan["memories"]["created"] == 2 and plan["edges"]["created"] == 1
    code, plan = push(db, server, "--dry-run", "--tags", "work")
    assert plan["memories"]["created"] == 1 and plan["edges"] == {**plan["edges"], "created": 0, "skipped": 1}
    assert on_server(server, tag) == {}  # nothing was sent
    code, summary = push(db, server, "--tags", "work")
    assert code == 0 and summary["memories"]["created"] == 1 and summary["edges"]["skipped"] == 1
    assert set(on_server(server, tag)) == {work}


class FlakyProxy:
    """A loopback proxy in front of a real server that loses answers: it forwards the first
    create, then drops the connection without replying (the memory exists, the client never
    hears so), and answers 503 to every sixth GET."""

    def __init__(self, target: str) -> None:
        import http.server
        import socketserver

        self.target = target
        self.lost = 0
        self.unavailable = 0
        self.gets = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                import httpx

                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "GET":
                    proxy.gets += 1
                    if proxy.gets % 6 == 0:
                        proxy.unavailable += 1
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                answer = httpx.request(self.command, proxy.target + self.path, content=body, headers=headers,
                                       timeout=60)
                creating = self.command == "POST" and self.path.split("?")[0] in ("/memory", "/memory/batch")
                if creating and proxy.lost < 2:
                    proxy.lost += 1  # applied on the server, answer lost on the way back
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PATCH = do_DELETE = _forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_lost_answers_and_503s_are_retried_without_duplicates(server, tmp_path):
    tag = f"flaky-{uuid.uuid4().hex[:8]}"
    db = tmp_path / "memory.db"
    bulk_store(db, tag, 12)
    proxy = FlakyProxy(server.url)
    try:
        through = Server(server.kind, proxy.url, server.token, server.admin_token)
        code, summary = push(db, through, "--batch-size", "5", "--verify", "--sample", "4")
    finally:
        proxy.close()
    assert code == 0, json.dumps(summary)[:2000]
    assert proxy.lost == 2 and proxy.unavailable >= 1
    assert summary["retried"] >= 1 and summary["memories"]["failed"] == 0
    assert len(on_server(server, tag)) == 12  # each exactly once
    assert summary["verify"]["ok"]


def test_a_replacement_is_created_before_the_memory_that_names_it(server, tmp_path):
    # Created first, the superseded memory would need an update right after its create, and
    # AutoMem's enrichment of that create writes its own copy of the metadata back over it.
    db = tmp_path / "order.db"
    tag = f"order-{uuid.uuid4().hex[:8]}"
    with MemoryStore(db, embedder="hash") as store:
        old = store.store("The deploy window is Friday", tags=[tag])
        new = store.supersede(old, "The deploy window is Thursday", tags=[tag])["memory_id"]
    code, summary = push(db, server, "--tags", tag)
    assert code == 0, summary
    assert (summary["memories"]["created"], summary["memories"]["updated"]) == (2, 0)
    remote = on_server(server, tag)
    metadata = remote[old]["metadata"]
    metadata = metadata if isinstance(metadata, dict) else json.loads(metadata)
    assert metadata["superseded_by"] == remote[new]["id"]
