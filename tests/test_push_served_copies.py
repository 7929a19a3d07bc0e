"""One memory two stores hold is one memory on ``localmem serve`` after both push it (docs/push.md, "Created again,
once"; the issue-42 follow-up on serve). On AutoMem two stores that pulled a memory hold it under different ids
(derived from the server's) and push's adoption keeps the same change from landing twice (tests/
test_push_created_again.py). ``localmem pull`` cannot read serve (it has no ``/graph/snapshot``): a store gets serve's
memories by ``localmem sync URL``, which keeps their ids, and push sends each store's memory under its own id, which
serve honours. What went wrong on main: a memory a store got from serve that no push put there (another client stored
it, or a sync brought it) carries no push marker there, so each store's push took the id for someone else's and
created a second copy under a new one: a memory two stores synced from serve was on it three times after both pushed.
Now a store's push takes a memory already there under its id, equal in every field it would send, as its own; one that
differs is created apart, as before, and a warning says so. Against a real ``localmem serve``, the CLI as a
subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from remote_servers import Server, localmem_serve
from test_pull import local_memories, run

ROTA = "The on-call rota changes on Mondays"
STAYS = "A note that stays on the server"


@pytest.fixture()
def served(tmp_path) -> Server:
    """A fresh ``localmem serve`` per test (each story counts the server's memories from nothing)."""
    with localmem_serve(tmp_path / "server.db") as server:
        yield server


def cli(db: Path, command: str, server: Server) -> dict[str, Any]:
    code, summary = run(db, command, server.url, server.token, LOCALMEM_API_TOKEN=server.token)
    assert code == 0, summary
    return summary


def on_server(tmp_path: Path) -> list[tuple[str, list[str]]]:
    """(content, tags) of every memory the server's file (``served``'s) holds."""
    return sorted((m["content"], sorted(m["tags"])) for m in local_memories(tmp_path / "server.db"))


def two_stores_synced_from_the_server(server: Server, tmp_path: Path) -> tuple[Path, Path, str]:
    """ROTA and STAYS stored straight on the server by another client; stores A and B sync them (how a store gets
    serve's memories). Returns the two stores' files and ROTA's id."""
    ids = {}
    for content, importance in ((STAYS, 0.5), (ROTA, 0.4)):
        answer = server.client.post("/memory", json={"content": content, "tags": ["team"], "importance": importance})
        assert answer.status_code == 201, answer.text
        ids[content] = answer.json()["memory_id"]
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for db in (a, b):
        MemoryStore(db, embedder="hash").close()
        assert cli(db, "sync", server)["copied_to_local"] == 2
    return a, b, ids[ROTA]


def test_a_memory_two_stores_synced_from_the_server_is_pushed_back_once(served, tmp_path):
    a, b, rota = two_stores_synced_from_the_server(served, tmp_path)
    for db in (a, b):
        summary = cli(db, "push", served)
        assert summary["memories"]["created"] == 0 and summary["adopted"] == 2, summary
        assert any("already there" in w and f"{rota} as {rota}" in w for w in summary["warnings"]), summary
    assert on_server(tmp_path) == [(STAYS, ["team"]), (ROTA, ["team"])]
    for db in (a, b):
        summary = cli(db, "push", served)
        assert summary["memories"]["created"] == summary["memories"]["updated"] == 0, summary


def lost_after_both_changed_it(server: Server, tmp_path: Path, tags_a: list[str], tags_b: list[str]
                               ) -> tuple[Path, Path, str]:
    """Both stores pushed what they synced; A sets ROTA's tags to ``tags_a`` and B to ``tags_b`` while another client
    deletes it on the server."""
    a, b, rota = two_stores_synced_from_the_server(server, tmp_path)
    for db in (a, b):
        cli(db, "push", server)
    for db, tags in ((a, tags_a), (b, tags_b)):
        with MemoryStore(db, embedder="hash") as store:
            store.update(rota, tags=tags)
    assert server.client.delete(f"/memory/{rota}").status_code == 200
    return a, b, rota


def test_the_same_change_to_a_memory_the_server_lost_is_created_there_once(served, tmp_path):
    a, b, rota = lost_after_both_changed_it(served, tmp_path, ["team", "oncall"], ["team", "oncall"])
    first = cli(a, "push", served)
    assert first["memories"]["created"] == 1, first
    assert any(f"memory {rota} was gone from the server" in w and "created again" in w for w in first["warnings"])
    second = cli(b, "push", served)  # its update lands on A's copy, under the same id
    assert second["memories"]["created"] == 0 and second["memories"]["updated"] == 1, second
    assert on_server(tmp_path) == [(STAYS, ["team"]), (ROTA, ["oncall", "team"])]
    assert served.client.get(f"/memory/{rota}").json()["memory"]["tags"] == ["team", "oncall"]
    for db in (a, b):
        assert sorted(m["content"] for m in local_memories(db)) == [STAYS, ROTA]
        summary = cli(db, "push", served)
        assert summary["memories"]["created"] == summary["memories"]["updated"] == 0, summary


def test_different_changes_to_a_memory_the_server_lost_leave_the_later_push_s(served, tmp_path):
    """docs/push.md, "Created again, once": on serve the two stores' copies share the memory's id, so the second
    push's change is sent over the first's, as any field two stores changed (push does not look at the server's
    changes; `localmem sync` with the server keeps both, as a conflict)."""
    a, b, rota = lost_after_both_changed_it(served, tmp_path, ["team", "oncall"], ["team", "pager"])
    assert cli(a, "push", served)["memories"]["created"] == 1
    second = cli(b, "push", served)
    assert second["memories"]["created"] == 0 and second["memories"]["updated"] == 1, second
    assert on_server(tmp_path) == [(STAYS, ["team"]), (ROTA, ["pager", "team"])]


def test_a_different_version_under_the_memory_s_id_is_not_taken_and_the_copy_is_said(served, tmp_path):
    """Another client changed ROTA on the server after A synced it: A's push finds a different memory under its
    id, creates its version apart (as before) and says so, naming both ids."""
    a, _, rota = two_stores_synced_from_the_server(served, tmp_path)
    assert served.client.patch(f"/memory/{rota}", json={"tags": ["team", "moved"]}).status_code == 200
    summary = cli(a, "push", served)
    assert summary["memories"]["created"] == 1 and summary["adopted"] == 1, summary
    copy = next(m["id"] for m in local_memories(tmp_path / "server.db") if m["content"] == ROTA and m["id"] != rota)
    assert any(rota in w and copy in w and "differs in tags" in w for w in summary["warnings"]), summary["warnings"]
    assert on_server(tmp_path) == [(STAYS, ["team"]), (ROTA, ["moved", "team"]), (ROTA, ["team"])]
