"""A memory a stopped pull wrote and never recorded is still a pulled memory (docs/pull.md, Deletions): changed
here after the server deleted it, kept, and created there again by a push, the server's second delete reaches it
by the same rules as the first. Found by the stateful push/pull model (seed 3817729323, "store 1 holds … which is
not on the server after the last round"); against the real AutoMem, as tests/test_pull_provenance.py."""

from __future__ import annotations

from localmem import MemoryStore
from test_pull import create, local_memories, pull, pull_killed_before_its_record, push, server  # noqa: F401
from test_pull_provenance import changed_here_then_deleted_there, listed

ROTA = "The on-call rota changes on Mondays"


def written_by_a_stopped_pull_then_created_again(db, server) -> str:
    """The pull writes ROTA and is stopped before recording it; ROTA is changed here and deleted on the server;
    the next pull keeps it, a push creates it there again. Returns its new server id."""
    create(server, "A note that stays on the server")
    first = create(server, ROTA, tags=["team"])
    server.wait_idle()
    pull_killed_before_its_record(db, server)
    with MemoryStore(db, embedder="hash") as store:
        local_id = next(m["id"] for m in local_memories(db) if m["content"] == ROTA)
        store.update(local_id, content="The on-call rota changes on Tuesdays")
    assert server.client.delete(f"/memory/{first}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 0, pulled
    assert any("changed here since" in w for w in pulled["warnings"]), pulled["warnings"]
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["created"] == 1, pushed
    server.wait_idle()
    return listed(server)["The on-call rota changes on Tuesdays"]


def test_the_servers_second_delete_reaches_a_memory_a_stopped_pull_wrote(server, tmp_path):
    db = tmp_path / "local.db"
    second = written_by_a_stopped_pull_then_created_again(db, server)
    assert server.client.delete(f"/memory/{second}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 1, pulled
    assert not any("written here" in w for w in pulled["warnings"]), pulled["warnings"]
    assert [m["content"] for m in local_memories(db)] == ["A note that stays on the server"]


def test_changed_here_again_it_is_kept_at_the_second_delete(server, tmp_path):
    db = tmp_path / "local.db"
    code, pulled = changed_here_then_deleted_there(db, server, written_by_a_stopped_pull_then_created_again(db, server))
    assert code == 0 and pulled["memories"]["deleted"] == 0, pulled
    assert any("changed here since" in w for w in pulled["warnings"]), pulled["warnings"]
    assert "The on-call rota changes on Wednesdays" in [m["content"] for m in local_memories(db)]
