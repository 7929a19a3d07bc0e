"""Where each memory came from (docs/pull.md, Deletions): a memory pulled from a server keeps
counting as "from that server" after a push created it there again under a new id, so the
server's second delete reaches it by the same rules as the first. Against the real AutoMem, as
tests/test_pull.py (whose helpers these use)."""

from __future__ import annotations

from pathlib import Path

from localmem import MemoryStore
from test_pull import counts, create, local_memories, pull, push, server  # noqa: F401 (server: a fixture)


def listed(server) -> dict[str, str]:
    """content -> the server's id."""
    nodes = server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]
    return {n["content"]: n["id"] for n in nodes}


def pulled_then_created_again(db: Path, server) -> str:
    """A memory pulled into ``db``, changed here after the server deleted it, kept by the next pull
    and created there again by a push; returns its new server id."""
    create(server, "A note that stays on the server")
    first = create(server, "The on-call rota changes on Mondays", tags=["team"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 2
    with MemoryStore(db, embedder="hash") as store:
        local_id = next(m["id"] for m in local_memories(db) if "rota" in m["content"])
        store.update(local_id, content="The on-call rota changes on Tuesdays")
    assert server.client.delete(f"/memory/{first}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 0, pulled
    assert any("changed here since" in w for w in pulled["warnings"]), pulled["warnings"]
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 1, pushed
    server.wait_idle()
    second = listed(server)["The on-call rota changes on Tuesdays"]
    assert second != first
    code, pulled = pull(db, server)  # in step again: nothing to take
    assert code == 0 and counts(pulled) == {"unchanged": 2}, pulled
    return second


def test_the_servers_second_delete_of_a_pulled_memory_a_push_created_again_reaches_it(server, tmp_path):
    db = tmp_path / "local.db"
    second = pulled_then_created_again(db, server)
    assert server.client.delete(f"/memory/{second}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 1, pulled
    assert not any("written here" in w for w in pulled["warnings"]), pulled["warnings"]
    assert [m["content"] for m in local_memories(db)] == ["A note that stays on the server"]
    code, pushed = push(db, server)  # not created a third time
    assert code == 0 and counts(pushed) == {}, pushed


def test_a_pulled_memory_a_push_created_again_and_changed_here_since_is_kept_at_the_second_delete(
        server, tmp_path):
    db = tmp_path / "local.db"
    second = pulled_then_created_again(db, server)
    with MemoryStore(db, embedder="hash") as store:
        local_id = next(m["id"] for m in local_memories(db) if "rota" in m["content"])
        store.update(local_id, content="The on-call rota changes on Wednesdays")
    assert server.client.delete(f"/memory/{second}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 0, pulled
    assert any("changed here since" in w for w in pulled["warnings"]), pulled["warnings"]
    assert not any("written here" in w for w in pulled["warnings"]), pulled["warnings"]
    assert "The on-call rota changes on Wednesdays" in [m["content"] for m in local_memories(db)]
