"""``localmem pull``: an AutoMem deployment copied into a local file, against the real AutoMem
(shared/tools/automem-server) with FalkorDB, each test on a fresh server (pull reads the whole
listing, so tests cannot share one). Changes are made on AutoMem's side through its own HTTP
API; the CLI runs as a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import apsw
import pytest

from localmem import MemoryStore
from remote_servers import CLEARED, ROOT, Server, automem


@pytest.fixture
def server(tmp_path_factory):
    with automem(tmp_path_factory.mktemp("automem-pull")) as running:
        yield running


def cli_env(token: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return {**env, "PYTHONPATH": str(ROOT), "AUTOMEM_API_TOKEN": token, **extra}


def run(db: Path, command: str, url: str, token: str, *options: str, **env: str) -> tuple[int, dict[str, Any]]:
    """``localmem --db DB --embedder hash pull|push URL --json OPTIONS``; (exit code, summary)."""
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", command,
                           url, "--json", *options], env=cli_env(token, **env), capture_output=True, text=True,
                          timeout=300)
    try:
        summary = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        raise AssertionError(f"not JSON: {done.stdout[-2000:]} / {done.stderr[-2000:]}") from None
    return done.returncode, summary | {"_stderr": done.stderr}


def pull(db: Path, server: Server, *options: str, **env: str) -> tuple[int, dict[str, Any]]:
    return run(db, "pull", server.url, server.token, *options, **env)


def push(db: Path, server: Server, *options: str) -> tuple[int, dict[str, Any]]:
    return run(db, "push", server.url, server.token, *options)


def create(server: Server, content: str, **fields: Any) -> str:
    answer = server.client.post("/memory", json={"content": content, **fields})
    assert answer.status_code == 201, answer.text
    return answer.json()["memory_id"]


def local_memories(db: Path) -> list[dict[str, Any]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT id, content, tags, metadata FROM memories ORDER BY content").fetchall()
    finally:
        conn.close()
    return [{"id": r[0], "content": r[1], "tags": json.loads(r[2] or "[]"), "metadata": json.loads(r[3] or "{}")}
            for r in rows]


def local_edges(db: Path) -> set[tuple[str, str, str]]:
    """Edges by the contents of their two memories."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT s.content, e.type, d.content FROM edges AS e JOIN memories AS s ON s.pk = e.src "
                            "JOIN memories AS d ON d.pk = e.dst").fetchall()
    finally:
        conn.close()
    return {tuple(r) for r in rows}


def associate(server: Server, first: str, second: str, relation: str, **fields: Any) -> None:
    answer = server.client.post("/associate", json={"memory1_id": first, "memory2_id": second,
                                                    "type": relation, **fields})
    assert answer.status_code in (200, 201), answer.text


def counts(summary: dict[str, Any], kind: str = "memories") -> dict[str, int]:
    return {k: v for k, v in summary[kind].items() if v}



def pull_killed_before_its_record(db: Path, server: Server) -> None:
    """A pull into ``db`` that dies after its batch's write, before the batch is recorded."""
    from localmem.replication.pull import Puller
    from localmem.replication.push_client import PushClient

    def killed(local_id: str) -> None:
        raise KeyboardInterrupt

    with PushClient(server.url, token=server.token) as client, MemoryStore(db, embedder="hash") as store:
        puller = Puller(store, client)
        puller.before_write = killed
        with pytest.raises(KeyboardInterrupt):
            puller.run()


def test_push_then_pull_is_a_noop_and_push_after_sends_nothing(server, tmp_path):
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        a = store.store("Chose PostgreSQL for the Alpha project", tags=["alpha", "db"], type="Decision",
                        importance=0.9, confidence=0.8, timestamp="2024-03-01T10:00:00Z", metadata={"k": [1, 2]})
        b = store.store("The Alpha API signs JWTs with RS256", tags=["alpha"])
        c = store.store("Deployments go through staging first")
        store.associate(a, b, "RELATES_TO", 0.4)
        store.associate(c, b, "PART_OF", 0.6, role="component")
        store.supersede(c, "Deployments go through staging, then a canary", reason="canary added")
    code, pushed = push(db, server)
    assert code == 0, pushed
    assert pushed["memories"]["created"] == 4
    server.wait_idle()  # AutoMem's enrichment adds entity tags, metadata and edges of its own
    before = local_memories(db)
    code, pulled = pull(db, server)
    assert code == 0, pulled
    assert pulled["complete_listing"] is True and pulled["listed"] == 4
    assert pulled["memories"]["created"] == 0 and pulled["memories"]["updated"] == 0
    assert pulled["memories"]["deleted"] == 0 and pulled["memories"]["unchanged"] == 4
    assert pulled["edges"]["created"] == 0 and pulled["edges"]["updated"] == 0
    assert pulled["edges"]["unchanged"] == 3
    assert local_memories(db) == before
    code, again = push(db, server)
    assert code == 0
    assert counts(again) == {} and again["edges"]["created"] == 0 and again["edges"]["updated"] == 0


def test_changes_made_on_automem_arrive_and_only_they(server, tmp_path):
    db = tmp_path / "local.db"
    first = create(server, "Alice likes green tea", tags=["alice"], importance=0.7,
                   timestamp="2025-01-02T03:04:05Z", metadata={"source": "chat"})
    second = create(server, "Bob prefers dark mode", tags=["bob"])
    third = create(server, "Carol moved to Lisbon", tags=["carol"])
    associate(server, first, second, "RELATES_TO", strength=0.4)
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0, pulled
    assert pulled["memories"]["created"] == 3 and pulled["edges"]["created"] == 1
    assert pulled["embeddings"]["reembedded"] == 3
    memories = {m["content"]: m for m in local_memories(db)}
    assert memories["Alice likes green tea"]["tags"] == ["alice"]  # no entity:* tags of AutoMem's enrichment
    assert memories["Alice likes green tea"]["metadata"] == {"source": "chat"}
    assert local_edges(db) == {("Alice likes green tea", "RELATES_TO", "Bob prefers dark mode")}

    # On AutoMem's side: a change, a new memory superseding another, a new edge.
    assert server.client.patch(f"/memory/{second}", json={"content": "Bob prefers light mode"}).status_code == 200
    fourth = create(server, "Carol moved to Porto", tags=["carol"])
    associate(server, third, fourth, "INVALIDATED_BY", strength=0.9, reason="moved again")
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0, pulled
    assert counts(pulled) == {"created": 1, "updated": 1, "unchanged": 2}, pulled
    assert pulled["edges"]["created"] == 1 and pulled["edges"]["unchanged"] == 1
    contents = [m["content"] for m in local_memories(db)]
    assert "Bob prefers light mode" in contents and "Bob prefers dark mode" not in contents
    assert len(contents) == 4
    with MemoryStore(db, embedder="hash") as store:
        old = next(m for m in store.list_memories(limit=10)["memories"] if m["content"] == "Carol moved to Lisbon")
        state = store.get(old["id"], with_edges=True)["state"]
        assert state["status"] == "superseded"  # the supersession made on AutoMem holds here
    code, again = pull(db, server)
    assert counts(again) == {"unchanged": 4} and again["edges"]["created"] == 0
    code, pushed = push(db, server)  # what came from there is not sent back
    assert code == 0 and counts(pushed) == {} and pushed["edges"]["created"] == 0, pushed


def test_deletion_on_automem_arrives(server, tmp_path):
    db = tmp_path / "local.db"
    keep = create(server, "A memory that stays", tags=["x"])
    gone = create(server, "A memory deleted on the server", tags=["x"])
    # An id in metadata.superseded_by is the server's: it arrives as the local id of that memory.
    create(server, "An older note", tags=["x"], metadata={"superseded_by": keep, "why": "moved"})
    associate(server, keep, gone, "LEADS_TO")
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 3
    memories = {m["content"]: m for m in local_memories(db)}
    assert memories["An older note"]["metadata"] == {"superseded_by": memories["A memory that stays"]["id"],
                                                     "why": "moved"}
    assert server.client.delete(f"/memory/{gone}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 1, pulled
    assert [m["content"] for m in local_memories(db)] == ["A memory that stays", "An older note"]
    assert local_edges(db) == set()
    code, pushed = push(db, server)  # the deletion is not sent back, nothing is re-created
    assert code == 0 and counts(pushed) == {}, pushed


def test_both_sides_changed_and_delete_against_a_local_edit(server, tmp_path):
    db = tmp_path / "local.db"
    edited = create(server, "Team standup is at 9", tags=["team"], importance=0.4)
    doomed = create(server, "The office wifi password rotates monthly", tags=["office"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 2
    by_content = {m["content"]: m["id"] for m in local_memories(db)}
    with MemoryStore(db, embedder="hash") as store:  # local edits, not pushed yet
        store.update(by_content["Team standup is at 9"], importance=0.9)
        store.update(by_content["The office wifi password rotates monthly"], tags=["office", "security"])
    assert server.client.patch(f"/memory/{edited}", json={"content": "Team standup is at 10"}).status_code == 200
    assert server.client.delete(f"/memory/{doomed}").status_code == 200
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0, pulled
    assert pulled["conflicts"] == 2 and pulled["memories"]["updated"] == 1, pulled
    assert pulled["memories"]["deleted"] == 0
    warnings = " ".join(pulled["warnings"])
    assert "changed both here and on the server" in warnings and "deleted on the server" in warnings
    with MemoryStore(db, embedder="hash") as store:
        standup = store.get(by_content["Team standup is at 9"])
        assert (standup["content"], standup["importance"]) == ("Team standup is at 10", 0.9)  # both kept
        assert store.get(by_content["The office wifi password rotates monthly"])["tags"] == ["office", "security"]
    code, pushed = push(db, server)  # the local edits go to the server; the kept memory is created again
    assert code == 0 and pushed["memories"]["created"] == 1 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    code, again = pull(db, server)
    assert counts(again) == {"unchanged": 2}, again


def test_kill_mid_pull_then_rerun_gives_the_full_set_once(server, tmp_path):
    db = tmp_path / "local.db"
    contents = [f"Memory number {i} about topic {i % 3}" for i in range(12)]
    answer = server.client.post("/memory/batch", json={"memories": [{"content": c, "tags": ["k"]} for c in contents]})
    assert answer.status_code in (200, 201), answer.text
    server.wait_idle()
    process = subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "pull", server.url, "--json",
         "--batch-size", "3"],
        env=cli_env(server.token, LOCALMEM_PULL_TEST_PAUSE_AFTER="2"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "paused" not in line:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
        assert "paused after writing batch 2" in line, line
        process.send_signal(signal.SIGKILL)  # batch 1 recorded, batch 2 stored but not recorded
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert len(local_memories(db)) == 6
    code, pulled = pull(db, server, "--batch-size", "3")
    assert code == 0, pulled
    assert pulled["resumed"] == 3 and pulled["memories"]["created"] == 6, pulled
    assert pulled["memories"]["unchanged"] == 3
    assert sorted(m["content"] for m in local_memories(db)) == sorted(contents)
    code, again = pull(db, server)
    assert counts(again) == {"unchanged": 12}


def test_a_push_after_a_pull_killed_before_recording_sends_nothing_back(server, tmp_path):
    """Found by tests/test_pull_stateful.py: a pull killed between writing a batch and recording
    it left memories the id map did not know, and a push run before the next pull created them
    on the server again (each there twice)."""
    db = tmp_path / "local.db"
    for text in ("The staging database is pg-staging-2", "Releases are cut on Thursdays"):
        create(server, text, tags=["ops"])
    server.wait_idle()

    pull_killed_before_its_record(db, server)
    assert len(local_memories(db)) == 2
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 0, pushed
    server.wait_idle()
    assert server.client.get("/graph/snapshot", params={"limit": 0}).json()["stats"]["total_nodes"] == 2
    code, pulled = pull(db, server)
    assert code == 0 and pulled["resumed"] == 2, pulled
    code, pushed = push(db, server)
    assert code == 0 and counts(pushed) == {}, pushed
    assert len(local_memories(db)) == 2


def test_the_same_field_changed_here_and_there_after_a_killed_pull_keeps_both_versions(server, tmp_path):
    """Found by tests/test_pull_stateful.py (seed 5): after a pull killed before recording, the
    content changed here and on the server; the pull that resumed took only the server's change
    (the field had moved there) and the next pull overwrote the local edit with no copy."""
    db = tmp_path / "local.db"
    remote = create(server, "The team offsite is in May", tags=["team"])
    server.wait_idle()

    pull_killed_before_its_record(db, server)
    with MemoryStore(db, embedder="hash") as store:
        store.update(local_memories(db)[0]["id"], content="The team offsite is in June")
    assert server.client.patch(f"/memory/{remote}", json={"content": "The team offsite is in July"}).status_code == 200
    server.wait_idle()
    for _ in range(2):
        code, pulled = pull(db, server)
        assert code == 0, pulled
    contents = sorted(m["content"] for m in local_memories(db))
    assert contents == ["The team offsite is in July", "The team offsite is in June"], contents


def test_a_memory_deleted_here_after_a_pull_was_killed_before_recording_it_is_not_pulled_again(server, tmp_path):
    """Found by tests/test_pull_stateful.py: the next pull took a memory a killed pull had written
    and the user then deleted for a new one, and brought it back."""
    db = tmp_path / "local.db"
    remote = create(server, "The VPN certificate expires in March", tags=["ops"])
    server.wait_idle()

    pull_killed_before_its_record(db, server)
    with MemoryStore(db, embedder="hash") as store:
        store.delete(local_memories(db)[0]["id"])
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["created"] == 0, pulled
    assert local_memories(db) == []
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["deleted"] == 1, pushed
    assert server.client.get(f"/memory/{remote}").status_code == 404


def test_an_edit_made_here_after_a_pull_was_killed_before_recording_is_not_lost(server, tmp_path):
    """Found by tests/test_pull_stateful.py: the pull that resumed a killed one recorded the edited
    memory as the server's version, so no push sent the edit and the next pull overwrote it."""
    db = tmp_path / "local.db"
    edited = create(server, "The design doc lives in the wiki", tags=["docs"])
    moved = create(server, "Standups are at nine", tags=["team"])
    server.wait_idle()

    pull_killed_before_its_record(db, server)
    ids = {m["content"]: m["id"] for m in local_memories(db)}
    with MemoryStore(db, embedder="hash") as store:  # edited here before the next pull
        store.update(ids["The design doc lives in the wiki"], content="The design doc lives in the repository")
    assert server.client.patch(f"/memory/{moved}", json={"content": "Standups are at ten"}).status_code == 200
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and pulled["resumed"] == 2, pulled
    code, pushed = push(db, server)  # sends the edit made here, and nothing older over the server's change
    assert code == 0 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    there = server.client.get(f"/memory/{edited}").json()["memory"]["content"]
    assert there == "The design doc lives in the repository"
    code, again = pull(db, server)  # takes the server's change, keeps the edit
    assert code == 0 and again["memories"]["updated"] == 1 and again["conflict_copies"] == [], again
    assert sorted(m["content"] for m in local_memories(db)) == ["Standups are at ten",
                                                               "The design doc lives in the repository"]


def test_a_pull_between_a_killed_push_and_the_next_takes_no_copy_of_what_it_created(server, tmp_path):
    """Found by tests/test_pull_stateful.py: a pull run after a push was killed between a create
    and its record pulled that memory back as a second local memory, and the next push, finding
    its create on the server, stopped on the id map's unique key."""
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("The backup job runs at two", tags=["ops"])
    code, crashed = run(db, "push", server.url, server.token, LOCALMEM_PUSH_TEST_CRASH_AFTER="1")
    assert code == 70, crashed  # the create answered, its id never recorded
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["created"] == 0, pulled
    assert len(local_memories(db)) == 1
    code, pushed = push(db, server)
    assert code == 0 and pushed["recovered"] == 1 and pushed["memories"]["created"] == 0, pushed
    code, again = pull(db, server)
    assert code == 0 and again["memories"]["created"] == 0 and len(local_memories(db)) == 1, again


@pytest.mark.parametrize("edited_here", [False, True])
def test_a_memory_a_killed_pull_wrote_and_the_server_deleted_since_is_deleted_here_unless_edited(
        server, tmp_path, edited_here):
    """Found by tests/test_pull_stateful.py: a memory a killed pull wrote and never recorded, then
    deleted on the server, was never deleted here (pull deletes only what its map knows) nor sent
    again (push leaves a stopped pull's memories alone): a stale copy for good. Unchanged here it
    goes to the trash; changed here it is kept, and the next push creates it there again."""
    db = tmp_path / "local.db"
    remote = create(server, "The release freeze starts on the 20th", tags=["release"])
    create(server, "A memory that stays", tags=["x"])
    server.wait_idle()

    pull_killed_before_its_record(db, server)
    if edited_here:
        with MemoryStore(db, embedder="hash") as store:
            doomed = next(m for m in local_memories(db) if m["content"].startswith("The release freeze"))
            store.update(doomed["id"], importance=0.9)
    assert server.client.delete(f"/memory/{remote}").status_code == 200
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0, pulled
    contents = sorted(m["content"] for m in local_memories(db))
    code, pushed = push(db, server)
    assert code == 0, pushed
    if edited_here:
        assert contents == ["A memory that stays", "The release freeze starts on the 20th"], pulled
        assert pushed["memories"]["created"] == 1, pushed
    else:
        assert contents == ["A memory that stays"] and pulled["memories"]["deleted"] == 1, pulled
        assert counts(pushed) == {}, pushed


def test_a_field_the_server_sets_back_after_a_push_is_pulled(server, tmp_path):
    """Found by tests/test_pull_stateful.py (seed 5): what a pull last took stayed the reference
    after a push changed the server, so a server value set back to it was taken for no change and
    the store kept its own for good."""
    db = tmp_path / "local.db"
    remote = create(server, "The coffee machine is on floor 2", tags=["office"], importance=0.5)
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 1
    with MemoryStore(db, embedder="hash") as store:
        store.update(local_memories(db)[0]["id"], importance=0.9)
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    assert server.client.patch(f"/memory/{remote}", json={"importance": 0.5}).status_code == 200  # another client
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["updated"] == 1, pulled
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(local_memories(db)[0]["id"])["importance"] == 0.5


def test_a_pulled_memory_changed_here_and_deleted_there_is_created_again_by_the_next_push(server, tmp_path):
    """A push that finds a memory gone from the server (its PATCH answers 404) creates it again,
    pulled or not (found by tests/test_pull_stateful.py while the fix above skipped it)."""
    db = tmp_path / "local.db"
    remote = create(server, "The on-call rota changes on Mondays", tags=["team"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 1
    with MemoryStore(db, embedder="hash") as store:
        store.update(local_memories(db)[0]["id"], content="The on-call rota changes on Tuesdays")
    assert server.client.delete(f"/memory/{remote}").status_code == 200
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 1 and pushed["skipped"] == [], pushed
    server.wait_idle()
    listed = server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]
    assert [n["content"] for n in listed] == ["The on-call rota changes on Tuesdays"]


def test_dry_run_writes_nothing_and_json_summary_shape(server, tmp_path):
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("Already here")
    create(server, "On the server only", tags=["s"])
    create(server, "Also on the server", tags=["s"])
    server.wait_idle()
    code, planned = pull(db, server, "--dry-run")
    assert code == 0, planned
    assert planned["dry_run"] is True and planned["memories"]["created"] == 2
    assert [m["content"] for m in local_memories(db)] == ["Already here"]
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM push_ids").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM pull_seen").fetchone()[0] == 0
    finally:
        conn.close()
    code, pulled = pull(db, server, "--limit", "1")
    assert set(pulled) >= {"status", "remote", "server", "dry_run", "listed", "complete_listing",
                           "left_for_next_pull", "memories", "edges", "embeddings", "resumed", "conflicts",
                           "skipped", "failed", "warnings", "seconds", "memories_per_second"}
    assert set(pulled["memories"]) == {"created", "updated", "unchanged", "deleted", "skipped", "failed"}
    assert pulled["status"] == "success" and pulled["server"] == "automem" and pulled["remote"] == server.url
    assert pulled["memories"]["created"] == 1 and pulled["left_for_next_pull"] == 1
    assert any("--limit 1" in w for w in pulled["warnings"])
    assert pull(db, server)[1]["memories"]["created"] == 1
    assert len(local_memories(db)) == 3


# -- a hostile server: a real HTTP server answering crafted listings --------------------------

GOOD = "5f0c3e1a-1111-4222-8333-944455556666"


def hostile_listing() -> str:
    deep: Any = "x"
    for _ in range(200):
        deep = {"d": deep}
    nodes = [
        {"id": GOOD, "content": "A good memory", "tags": ["ok"], "importance": 0.5, "timestamp": "2025-01-01T00:00:00Z",
         "metadata": {}},
        {"id": "nan-importance", "content": "NaN importance", "importance": float("nan")},
        {"id": "huge", "content": "x" * 2_000_000},
        {"id": "deep", "content": "Deep metadata", "metadata": deep},
        {"id": "bad-time", "content": "Bad timestamp", "timestamp": "the day after tomorrow"},
        {"id": "../../etc/passwd", "content": "Odd id"},
        {"id": "inf-confidence", "content": "Infinite confidence", "confidence": float("inf")},
        {"id": "tags-not-list", "content": "Tags as text", "tags": "a,b"},
        {"id": "odd-type", "content": "A type AutoMem keeps and the store does not know", "type": "Note"},
        "not an object",
    ]
    edges = [{"source": GOOD, "target": "huge", "type": "RELATES_TO", "strength": float("nan")}]
    return json.dumps({"nodes": nodes, "edges": edges, "stats": {"total_nodes": len(nodes)}})


class Hostile(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/health"):
            body = json.dumps({"status": "healthy"})
        elif self.path.startswith("/graph/snapshot"):
            body = self.server.listing  # type: ignore[attr-defined]
        elif self.path.startswith("/memory/") and self.path[len("/memory/"):] in getattr(self.server, "alive", ()):
            body = json.dumps({"status": "success", "memory": {"id": self.path[len("/memory/"):]}})
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_hostile_records_are_reported_and_skipped(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    httpd.listing = hostile_listing()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    db = tmp_path / "local.db"
    try:
        code, planned = run(db, "pull", url, "t", "--dry-run")  # a dry run creates no file
        assert code == 1 and "no database" in planned["_stderr"] and not db.exists()
        code, pulled = run(db, "pull", url, "t", "--progress")
        assert "pulling new" in pulled["_stderr"]  # progress on stderr, the summary on stdout
        assert pulled["memories"]["created"] == 2, pulled
        assert pulled["memories"]["skipped"] == 8
        assert any("types the store does not know" in w and "Note" in w for w in pulled["warnings"])
        reasons = " ".join(item["reason"] for item in pulled["skipped"])
        for field in ("importance", "content", "metadata", "timestamp", "'id'", "confidence", "tags"):
            assert field in reasons, (field, reasons)
        assert pulled["edges"]["skipped"] == 1
        assert [m["content"] for m in local_memories(db)] == [
            "A good memory", "A type AutoMem keeps and the store does not know"]
        # The listing is complete by count, but the skipped ones are not "deleted" either way.
        code, again = run(db, "pull", url, "t")
        assert again["memories"]["unchanged"] == 2 and again["memories"]["deleted"] == 0
        code, capped = run(db, "pull", url, "t", "--max-answer-mb", "1")
        assert code == 1 and "refused" in capped["_stderr"]
        # A listing nested past any sane depth: refused before parsing, no traceback, nothing lost.
        httpd.listing = "[" * 100_000 + "]" * 100_000  # type: ignore[attr-defined]
        code, deep = run(db, "pull", url, "t")
        assert code == 1 and "nested more than 512 levels deep" in deep["_stderr"], deep
        assert "Traceback" not in deep["_stderr"]
        assert len(local_memories(db)) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_memory_missing_from_a_full_count_listing_is_deleted_only_when_the_server_says_404(tmp_path):
    """The listing's count can match while one memory is left out and another written: a pull
    asks for each missing memory before deleting it here."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    first = {"id": GOOD, "content": "A memory the listing will leave out"}
    second = {"id": "second-1", "content": "A memory deleted on the server"}
    httpd.listing = json.dumps({"nodes": [first, second], "stats": {"total_nodes": 2}})  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    db = tmp_path / "local.db"
    try:
        assert run(db, "pull", url, "t")[1]["memories"]["created"] == 2
        newer = {"id": "third-1", "content": "A memory written during the listing"}
        other = {"id": "fourth-1", "content": "Another one"}
        httpd.listing = json.dumps({"nodes": [newer, other], "stats": {"total_nodes": 2}})  # type: ignore[attr-defined]
        httpd.alive = {GOOD}  # type: ignore[attr-defined]  # still there; second-1 answers 404
        code, pulled = run(db, "pull", url, "t")
        assert code == 0, pulled
        assert pulled["complete_listing"] is True and pulled["memories"]["deleted"] == 1, pulled
        assert any("still on the server" in w for w in pulled["warnings"])
        assert [m["content"] for m in local_memories(db)] == [
            "A memory the listing will leave out", "A memory written during the listing", "Another one"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_memory_written_here_and_pushed_is_not_deleted_when_the_server_drops_it(server, tmp_path):
    """Pull deletes only what came from the server (issue 42): a memory written here, pushed, then
    deleted there stays here, and the pull says so."""
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        mine = store.store("A note written on this laptop", tags=["laptop"])
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 1, pushed
    theirs = create(server, "A note written on the server", tags=["server"])
    create(server, "A note that stays on the server", tags=["server"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 2
    remote_mine = next(n["id"] for n in server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]
                       if n["content"] == "A note written on this laptop")
    for remote_id in (remote_mine, theirs):
        assert server.client.delete(f"/memory/{remote_id}").status_code == 200
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 1, pulled
    assert any("written here and pushed" in w for w in pulled["warnings"]), pulled["warnings"]
    assert [m["content"] for m in local_memories(db)] == ["A note that stays on the server",
                                                         "A note written on this laptop"]
    assert mine in {m["id"] for m in local_memories(db)}
