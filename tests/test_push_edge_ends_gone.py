"""An edge whose memory the server deleted since this store last pulled (docs/push.md): push
skips it with a reason instead of failing (found by tests/test_pull_stateful.py: a conflict copy's
link to a winner another client had deleted). Against the real AutoMem, as tests/test_pull.py."""

from __future__ import annotations

from localmem import MemoryStore
from test_pull import counts, pull, push, server  # noqa: F401 (server: a fixture)


def test_an_edge_to_a_memory_the_server_deleted_is_skipped_with_a_reason_not_failed(server, tmp_path):
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        first = store.store("The deploy runs on Fridays")
        second = store.store("Deploys need two reviewers")
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 2, pushed
    gone = next(n["id"] for n in server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]
                if n["content"] == "Deploys need two reviewers")
    assert server.client.delete(f"/memory/{gone}").status_code == 200
    with MemoryStore(db, embedder="hash") as store:
        store.associate(first, second, "RELATES_TO", 0.5)
    code, pushed = push(db, server)
    assert code == 0 and pushed["failed"] == [] and pushed["edges"]["skipped"] == 1, pushed
    reasons = [item["reason"] for item in pushed["skipped"] if item["kind"] == "edge"]
    assert len(reasons) == 1 and "gone from the server" in reasons[0] and second in reasons[0], reasons
    code, pulled = pull(db, server)  # written here: kept, and the edge with it
    assert code == 0 and any("written here and pushed" in w for w in pulled["warnings"]), pulled
