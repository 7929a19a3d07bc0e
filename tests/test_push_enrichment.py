"""A push's PATCH of tags or metadata and AutoMem's enrichment (localmem/replication/push_enrichment.py,
docs/push.md): AutoMem's worker writes a new memory's tags and metadata back from what it read before, so a
PATCH landing in between is lost though answered 200; push waits, bounded, until nothing can rewrite the
memory, and names what it could not confirm. The first test runs against the real AutoMem, as
tests/test_pull.py; the others drive the wait with a scripted server and clock."""

from __future__ import annotations

import json
from typing import Any

from localmem import MemoryStore
from localmem.replication.pull import Puller
from localmem.replication.push import Pusher
from localmem.replication.push_client import PushClient, Response
from localmem.replication.push_enrichment import EnrichmentWait
from test_pull import server  # noqa: F401 (a fixture)

ROUNDS = 15  # each round lost its tag edit about 3 times in 10 on main's code (9 of 30)


def own(tags: list[str]) -> list[str]:
    return sorted(t for t in tags if not t.startswith("entity:"))


def test_a_tag_and_metadata_edit_pushed_right_after_the_create_stays_on_the_server_and_here(server, tmp_path):
    store = MemoryStore(tmp_path / "local.db", embedder="hash")
    undone = []
    with PushClient(server.url, token=server.token) as client:
        for n in range(ROUNDS):
            memory_id = store.store(f"Round {n}: Alice moved the standup to Paris time", tags=["draft"],
                                    metadata={"round": n})
            assert Pusher(store, client).run().ok
            store.update(memory_id, tags=["final"], metadata={"round": n, "reviewed": True})
            assert Pusher(store, client).run().ok
            server.wait_idle()
            remote_id = store.conn.execute("SELECT remote_id FROM push_ids WHERE local_id = ?",
                                           (memory_id,)).fetchone()[0]
            there = server.client.get(f"/memory/{remote_id}").json()["memory"]
            if own(there["tags"]) != ["final"] or there["metadata"].get("reviewed") is not True:
                undone.append((n, own(there["tags"]), there["metadata"].get("reviewed")))
        assert not undone, f"edits the server answered 200 for and then undid: {undone}"
        # And the next pull takes nothing back: the local edits stay.
        assert Puller(store, client, allow_deletes=0).run().ok
    tags = {tuple(own(json.loads(row[0]))) for row in store.conn.execute("SELECT tags FROM memories")}
    assert tags == {("final",)}
    store.close()


class Scripted(PushClient):
    """A server whose memory stays unprocessed; its health says the queue is busy (or empty)."""

    def __init__(self, busy: bool) -> None:
        super().__init__("http://127.0.0.1:9")
        self.busy, self.asked = busy, []

    def request(self, method: str, route: str, **kwargs: Any) -> Response:
        self.asked.append(route)
        if route == "/health":
            return Response(200, {"enrichment": {"status": "running", "pending": int(self.busy), "inflight": 0}})
        return Response(200, {"memory": {"id": "r1", "tags": ["draft"], "processed": False}})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_memory_still_enriching_when_the_budget_is_spent_is_sent_and_named():
    client, clock = Scripted(busy=True), Clock()
    wait = EnrichmentWait(client, {"enrichment": {"status": "running"}}, budget=2.0, clock=clock,
                          sleep=clock.sleep)
    first = client.get("/memory/r1")
    assert wait.current("local-1", "/memory/r1", first).body["memory"]["processed"] is False
    assert 2.0 <= clock.now < 2.2  # it waited the budget, no more
    assert wait.current("local-2", "/memory/r1", first) is first  # the budget is per run: no second wait
    assert wait.unconfirmed == ["local-1", "local-2"]
    note = " ".join(wait.notes())
    assert "2 memories' tags or metadata were sent while AutoMem was still enriching them" in note
    assert "local-1" in note and "not confirmed" in note


def test_nothing_queued_or_no_worker_means_no_wait_and_no_note():
    for client, health in ((Scripted(busy=False), {"enrichment": {"status": "running"}}),
                           (Scripted(busy=True), {"enrichment": {"status": "stopped"}}),
                           (Scripted(busy=True), {"service": "localmem"})):
        clock = Clock()
        wait = EnrichmentWait(client, health, budget=2.0, clock=clock, sleep=clock.sleep)
        first = client.get("/memory/r1")
        assert wait.current("local-1", "/memory/r1", first) is first
        assert clock.now == 0.0 and wait.notes() == [] and wait.unconfirmed == []
