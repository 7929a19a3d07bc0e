"""Switching embedding models in place: ``localmem reembed`` (CLI) and ``POST /admin/reembed``
(HTTP, AutoMem's admin route) across a dimension change, resumable, with recall answering
throughout and the old vectors gone afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import httpx
import pytest
import sqlite_vec

from localmem import MemoryStore
from remote_servers import CLEARED, ROOT, localmem_serve

FACTS = [
    ("Chose PostgreSQL over MongoDB for the primary database", ["project:alpha", "database"]),
    ("The deploy pipeline runs integration tests before every release", ["ops"]),
    ("User prefers dark mode in every editor", ["preference:ui"]),
    ("Login failed with 401 after rotating the JWT signing key", ["auth", "incident"]),
    ("Lunch on Fridays is pizza with the whole team", ["social"]),
] + [(f"Filler memory number {i} about subject {i % 7}", [f"filler:{i % 3}"]) for i in range(45)]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args],
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)


def make_store(db: Path, embedder: str = "hash:64") -> None:
    with MemoryStore(db, embedder=embedder) as store:
        store.store_many([{"content": text, "tags": tags} for text, tags in FACTS])


def vector_facts(db: Path) -> dict[str, object]:
    """What the file holds: recorded embedder and dimension, embedding sizes, code sizes."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dimensions')"))
        sizes = dict(conn.execute("SELECT length(embedding), count(*) FROM memory_embeddings GROUP BY 1"))
        index = dict(conn.execute("SELECT length(codes), count(*) FROM vector_codes GROUP BY 1"))
        codes = conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0]
        staged = conn.execute("SELECT count(*) FROM reembed_staging").fetchone()[0]
        # bytes per token code -> memories (one bit per dimension)
        token_widths = dict(conn.execute("SELECT length(codes) / tokens, count(*) FROM token_codes GROUP BY 1"))
    finally:
        conn.close()
    return {"embedder": meta["embedder"], "dimensions": int(meta["dimensions"]), "sizes": sizes,
            "index": index, "codes": codes, "staged": staged, "token_widths": token_widths}


def top_hit(db: Path, query: str, *extra: str) -> dict:
    done = cli(db, "--json", "recall", query, "--limit", "3", *extra)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["vector_search"]["enabled"], body["vector_search"]
    return body["results"][0]


def test_reembed_hash64_to_hash384_in_place(tmp_path):
    db = tmp_path / "memory.db"
    make_store(db)
    assert vector_facts(db)["dimensions"] == 64

    # Part of the way: the old vectors still answer, the file still says 64.
    done = cli(db, "--json", "reembed", "--embedder", "hash:384", "--limit", "20", "--batch-size", "8")
    assert done.returncode == 0, done.stderr
    partial = json.loads(done.stdout)
    assert partial["status"] == "in_progress" and partial["processed"] == 20 and partial["remaining"] == 30
    facts = vector_facts(db)
    assert facts["dimensions"] == 64 and facts["sizes"] == {256: 50} and facts["staged"] == 20
    assert facts["token_widths"] == {64 // 8: 50}  # staged token codes wait for the swap too
    assert top_hit(db, "JWT signing key rotated")["memory"]["content"].startswith("Login failed")

    # A memory written meanwhile (with the old embedder) is embedded too, once the rest is done.
    with MemoryStore(db, embedder="hash:64") as store:
        late = store.store("Written while the reembed was half done: the cache uses Redis")
    done = cli(db, "--json", "reembed", "--embedder", "hash:384")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "complete" and report["processed"] == 31 and report["total"] == 51
    assert report["previous"] == {"embedder": "hash-64", "dimensions": 64}

    facts = vector_facts(db)
    assert facts["embedder"] == "hash" and facts["dimensions"] == 384
    assert facts["sizes"] == {384 * 4: 51}  # no 64-dimension vector left
    assert facts["index"] == {3 * 384 // 8: 51} and facts["codes"] == 51 and facts["staged"] == 0
    assert facts["token_widths"] == {384 // 8: 51}  # every memory's token codes made by the new model
    # Recall is right afterwards, opened with the recorded embedder and no --embedder.
    assert top_hit(db, "JWT signing key rotated")["memory"]["content"].startswith("Login failed")
    hit = top_hit(db, "cache uses Redis")
    assert hit["memory"]["id"] == late and hit["score_components"]["vector"] > 0.5
    assert cli(db, "doctor").returncode == 0
    again = cli(db, "--json", "recall", "x", "--embedder", "hash:64")
    assert again.returncode != 0 and "dimension" in again.stderr  # the old embedder no longer fits


def test_reembed_bad_input_changes_nothing(tmp_path):
    db = tmp_path / "memory.db"
    make_store(db)
    for args, fragment in ((["--embedder", "none"], "not 'none'"), (["--batch-size", "0"], "--batch-size"),
                           (["--limit", "0"], "--limit")):
        done = cli(db, "reembed", *args)
        assert done.returncode == 2 and fragment in done.stderr, (args, done.stderr)
    assert vector_facts(db)["dimensions"] == 64 and vector_facts(db)["staged"] == 0


@pytest.fixture
def served(tmp_path):
    db = tmp_path / "server.db"
    make_store(db)
    with localmem_serve(db, embedder="hash:64") as server:
        yield server, db


def test_admin_reembed_needs_the_admin_token(served):
    server, db = served
    url = server.url
    assert httpx.post(f"{url}/admin/reembed", json={}, headers={"X-Admin-Token": server.admin_token}
                      ).status_code == 401  # no API token
    wrong = server.client.post("/admin/reembed", json={}, headers={"X-Admin-Token": "nope"})
    assert wrong.status_code == 401 and "Admin authorization required" in wrong.json()["message"]
    assert server.client.post("/admin/reembed", json={}).status_code == 401
    bad = server.client.post("/admin/reembed", json={"limit": "ten"}, headers={"X-Admin-Token": server.admin_token})
    assert bad.status_code == 400 and "limit" in bad.json()["message"]
    unknown = server.client.post("/admin/reembed", json={"lmit": 5}, headers={"X-Admin-Token": server.admin_token})
    assert unknown.status_code == 400 and "lmit" in unknown.json()["message"]
    assert vector_facts(db)["staged"] == 0


def test_admin_reembed_not_configured_is_403(tmp_path):
    from localmem.http.app import create_app
    from starlette.testclient import TestClient

    with MemoryStore(":memory:", embedder="hash") as store:
        client = TestClient(create_app(store, token="t", admin_token=None), base_url="http://localhost")
        os.environ.pop("ADMIN_API_TOKEN", None)
        response = client.post("/admin/reembed", json={}, headers={"Authorization": "Bearer t",
                                                                   "X-Admin-Token": "anything"})
        assert response.status_code == 403 and "not configured" in response.json()["message"]


def test_admin_reembed_switches_a_running_server_while_recall_answers(served):
    server, db = served
    with MemoryStore(db, embedder="hash:64") as store:  # enough memories for the reembed to take a while
        store.store_many([{"content": f"Background memory {i} on theme {i % 11}"} for i in range(1500)])
    admin = {"X-Admin-Token": server.admin_token}
    answers: list[tuple[float, float, int, str]] = []
    stop = threading.Event()

    def recall_loop() -> None:
        with httpx.Client(base_url=server.url, headers=dict(server.client.headers), timeout=30) as c:
            while not stop.is_set():
                asked = time.monotonic()
                response = c.get("/recall", params={"query": "dark mode editor", "limit": 2})
                top = (response.json()["results"][0]["memory"]["content"] if response.status_code == 200
                       else response.text)
                answers.append((asked, time.monotonic(), response.status_code, top))

    thread = threading.Thread(target=recall_loop)
    thread.start()
    try:
        while not answers:
            time.sleep(0.01)
        first = server.client.post("/admin/reembed", json={"limit": 10, "batch_size": 5, "embedder": "hash:384"},
                                   headers=admin)
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "in_progress" and first.json()["processed"] == 10
        assert first.json()["batch_size"] == 5
        began = time.monotonic()
        rest = server.client.post("/admin/reembed", json={"embedder": "hash:384", "batch_size": 5}, headers=admin)
        ended = time.monotonic()
        assert rest.status_code == 200 and rest.json()["status"] == "complete", rest.text
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(30)
    during = [a for a in answers if a[0] < ended and a[1] > began]
    assert during, "no recall was answered while the reembed ran"
    wrong = [a for a in answers if a[2] != 200 or not a[3].startswith("User prefers dark mode")]
    assert not wrong, wrong[:5]
    health = server.client.get("/health").json()
    assert health["embedder"]["name"] == "hash" and health["embedder"]["dimensions"] == 384
    assert health["vector_dimensions"]["configured"] == 384 and health["indexes_agree"]
    hit = server.client.get("/recall", params={"query": "JWT signing key rotated", "limit": 1}).json()
    assert hit["results"][0]["memory"]["content"].startswith("Login failed") and hit["vector_search"]["enabled"]
    facts = vector_facts(db)
    assert facts["dimensions"] == 384 and facts["sizes"] == {1536: 1550}
    # A new memory is embedded with the new embedder; an embedding of the old size is refused.
    stored = server.client.post("/memory", json={"content": "Stored after the switch", "embedding": [0.1] * 64})
    assert stored.status_code == 400
    assert server.client.post("/memory", json={"content": "Stored after the switch"}).status_code == 201
    assert vector_facts(db)["sizes"] == {1536: 1551}


def test_a_running_server_follows_a_reembed_made_by_the_cli(served):
    server, db = served
    done = cli(db, "--json", "reembed", "--embedder", "hash:384")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "complete", done.stderr
    hit = server.client.get("/recall", params={"query": "JWT signing key rotated", "limit": 1}).json()
    assert hit["vector_search"]["enabled"] and hit["results"][0]["memory"]["content"].startswith("Login failed")
    assert server.client.get("/health").json()["embedder"]["dimensions"] == 384


@pytest.mark.model
def test_reembed_to_minilm(tmp_path):
    db = tmp_path / "memory.db"
    make_store(db)
    done = cli(db, "--json", "reembed", "--embedder", "auto")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "complete" and report["embedder"] == "all-MiniLM-L6-v2"
    facts = vector_facts(db)
    assert facts["embedder"] == "all-MiniLM-L6-v2" and facts["dimensions"] == 384
    assert facts["sizes"] == {1536: 50}
    # Semantic recall, which hash vectors cannot do: no word of the query is in the memory.
    # (Read in this process: one model load instead of one per CLI call.)
    with MemoryStore(db, embedder="auto") as store:
        assert store.dimensions == 384
        hit = store.recall("which relational store did we pick?", tags=["project"], limit=3)["results"][0]
        assert hit["memory"]["content"].startswith("Chose PostgreSQL")
        hit = store.recall("people want a darker colour scheme in their IDE", limit=3)["results"][0]
        assert hit["memory"]["content"].startswith("User prefers dark mode")
        assert hit["score_components"]["vector"] > 0.3
