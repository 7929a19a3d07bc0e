"""No mass deletion without being asked (issue 42, item 5): a sync or pull that would delete more
than a small share of a store stops before writing, names the count, and needs --allow-deletes N.

On f49a3c6 an emptied peer, a lying sync server and an emptied AutoMem server each deleted
every local memory, with exit code 0.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from localmem import MemoryStore
from test_sync_hostile_remote import STORE_ID, cli, crafted


def count(path: Path) -> int:
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        return store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]


def synced_pair(tmp_path: Path, n: int = 20) -> tuple[Path, Path, list[str]]:
    local, peer = tmp_path / "local.db", tmp_path / "peer.db"
    with MemoryStore(local, embedder="hash") as store:
        ids = store.store_many([{"content": f"note {i} written on the laptop"} for i in range(n)])
    MemoryStore(peer, embedder="hash").close()
    assert cli(local, "sync", str(peer)).returncode == 0
    return local, peer, ids


def test_a_peer_that_lost_everything_deletes_nothing_unasked(tmp_path):
    local, peer, ids = synced_pair(tmp_path)
    with MemoryStore(peer, embedder="hash") as store:
        for memory_id in ids:
            store.delete(memory_id)
    run = cli(local, "sync", str(peer), "--json")
    assert run.returncode == 1 and "would delete 20 of the 20 memories" in run.stderr, run.stderr
    assert "--allow-deletes 20" in run.stderr
    assert count(local) == 20
    small = cli(local, "sync", str(peer), "--allow-deletes", "5")
    assert small.returncode == 1 and count(local) == 20  # too few allowed: still nothing
    allowed = cli(local, "sync", str(peer), "--allow-deletes", "20", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["deleted_on_local"] == 20 and count(local) == 0


def test_a_few_deletions_need_no_permission(tmp_path):
    local, peer, ids = synced_pair(tmp_path)
    with MemoryStore(peer, embedder="hash") as store:
        for memory_id in ids[:3]:
            store.delete(memory_id)
    run = cli(local, "sync", str(peer), "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["deleted_on_local"] == 3
    assert count(local) == 17


def test_a_lying_sync_server_cannot_delete_the_store(tmp_path):
    local = tmp_path / "local.db"
    with MemoryStore(local, embedder="hash") as store:
        ids = store.store_many([{"content": f"note {i}"} for i in range(20)])
    future = (datetime.now(timezone.utc) + timedelta(days=3650)).isoformat()

    def answer(method: str, path: str, body: dict) -> tuple[int, Any]:
        if path == "/sync/hello":
            return 200, {"status": "success", "store_id": STORE_ID, "clock": 5, "sent_to": 0}
        if path == "/sync/page" and body.get("kind") == "deletions" and body["after"] == 0:
            return 200, {"status": "success", "last": 5, "items": [
                {"id": i, "record": None, "deleted_at": future, "problem": None} for i in ids]}
        if path == "/sync/page":
            return 200, {"status": "success", "items": [], "last": None}
        return 200, {"status": "success", "states": [], "refused": []}

    with crafted(answer) as url:
        run = cli(local, "sync", url, "--token", "t")
    assert run.returncode == 1 and "would delete 20 of the 20" in run.stderr, run.stderr
    assert count(local) == 20


GOOD = "5f0c3e1a-1111-4222-8333-9444555566"


def automem_answer(state: dict[str, Any]):
    def answer(method: str, path: str, body: dict) -> tuple[int, Any]:
        if path.startswith("/health"):
            return 200, {"status": "healthy"}
        if path.startswith("/graph/snapshot"):
            nodes = [{"id": f"{GOOD}{n:02d}", "content": f"server note {n}"} for n in state["listed"]]
            return 200, {"nodes": nodes, "edges": [], "stats": {"total_nodes": len(nodes)}}
        return 404, {"status": "error", "message": "not found"}  # every GET /memory/<id>: gone
    return answer


def test_an_emptied_automem_server_deletes_nothing_and_says_so(tmp_path):
    db = tmp_path / "pulled.db"
    state = {"listed": range(20)}
    with crafted(automem_answer(state)) as url:
        first = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json")
        assert json.loads(first.stdout)["memories"]["created"] == 20
        state["listed"] = range(0)  # redeployed on a fresh volume, same URL
        run = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json")
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["memories"]["deleted"] == 0
        assert any("lists no memories at all" in w for w in report["warnings"]), report["warnings"]
        assert count(db) == 20
        state["listed"] = range(2)  # a shrunken listing: 18 answer 404
        run = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json")
        assert run.returncode == 1 and "would delete 18 of the 20" in run.stderr, run.stderr
        assert count(db) == 20
        run = cli(db, "--embedder", "hash", "pull", url, "--token", "t", "--json", "--allow-deletes", "18")
        assert run.returncode == 0 and json.loads(run.stdout)["memories"]["deleted"] == 18
        assert count(db) == 2
