"""Where each memory came from (docs/pull.md, Deletions): a memory pulled from a server keeps
counting as "from that server" after a push created it there again under a new id, so the
server's second delete reaches it by the same rules as the first. Against the real AutoMem, as
tests/test_pull.py (whose helpers these use)."""

from __future__ import annotations

from pathlib import Path

from localmem import MemoryStore
from localmem.storage.database import connect
from localmem.storage.migrations import LATEST_VERSION, migrate, pulled_local_id
from localmem.storage.statements import Statements
from test_pull import counts, create, local_memories, pull, push, server  # noqa: F401 (server: a fixture)

BEFORE = LATEST_VERSION - 1  # the schema main's code writes: the newest migration is this feature's


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


def changed_here_then_deleted_there(db: Path, server, second: str) -> tuple[int, dict]:
    """The rota memory changed here, then the server deletes its copy ``second``: the next pull's exit code and
    answer."""
    with MemoryStore(db, embedder="hash") as store:
        local_id = next(m["id"] for m in local_memories(db) if "rota" in m["content"])
        store.update(local_id, content="The on-call rota changes on Wednesdays")
    assert server.client.delete(f"/memory/{second}").status_code == 200
    return pull(db, server)


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
    code, pulled = changed_here_then_deleted_there(db, server, pulled_then_created_again(db, server))
    assert code == 0 and pulled["memories"]["deleted"] == 0, pulled
    assert any("changed here since" in w for w in pulled["warnings"]), pulled["warnings"]
    assert not any("written here" in w for w in pulled["warnings"]), pulled["warnings"]
    assert "The on-call rota changes on Wednesdays" in [m["content"] for m in local_memories(db)]


def origins(db: Path) -> dict[str, str]:
    """content -> where the store says it came from."""
    with MemoryStore(db, embedder="hash") as store:
        return dict(store.conn.execute("SELECT m.content, o.origin FROM remote_origins AS o "
                                       "JOIN memories AS m ON m.id = o.local_id").fetchall())


def as_main_left_it(db: Path) -> None:
    """The file as main's code (schema ``BEFORE``) leaves it after the same pushes and pulls: the migration's
    table gone, the version set back."""
    with MemoryStore(db, embedder="hash") as store:
        store.conn.execute("DROP TABLE remote_origins")
        store.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(BEFORE),))


def test_the_migration_fills_where_each_memory_came_from_from_the_id_map(server, tmp_path):
    db = tmp_path / "local.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("A note written on this laptop")
    assert push(db, server)[1]["memories"]["created"] == 1
    theirs = create(server, "A note written on the server")
    create(server, "A note that stays on the server")
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 2
    made_here = {"A note written on this laptop": "pushed", "A note written on the server": "pulled",
                 "A note that stays on the server": "pulled"}
    assert origins(db) == made_here
    as_main_left_it(db)
    assert origins(db) == made_here  # reopened: migrated again, from the id map alone
    mine = listed(server)["A note written on this laptop"]
    for remote_id in (mine, theirs):
        assert server.client.delete(f"/memory/{remote_id}").status_code == 200
    code, pulled = pull(db, server)
    assert code == 0 and pulled["memories"]["deleted"] == 1, pulled
    assert any("written here and pushed" in w for w in pulled["warnings"]), pulled["warnings"]
    assert [m["content"] for m in local_memories(db)] == ["A note that stays on the server",
                                                         "A note written on this laptop"]


def test_the_migration_tells_pulled_from_pushed_per_server_and_leaves_pending_creates_out(tmp_path):
    """Without a server: an id map over two servers, as main's code writes it."""
    conn = connect(str(tmp_path / "before.db"))
    assert migrate(conn, Statements(), target=BEFORE) == BEFORE
    a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"
    rows = [(a, pulled_local_id(a, "ra-1"), "ra-1"),  # pulled from a
            (a, "11111111-2222-4333-8444-555555555555", "ra-2"),  # written here, pushed to a
            (b, pulled_local_id(a, "ra-1"), "rb-1"),  # the memory pulled from a, pushed to b
            (b, "22222222-2222-4333-8444-555555555555", None)]  # a create sent to b, answer not recorded
    with conn:
        for remote in (a, b):
            conn.execute("INSERT INTO push_remotes (remote, kind, first_push) VALUES (?, 'automem', 'x')", (remote,))
        conn.executemany("INSERT INTO push_ids (remote, local_id, remote_id) VALUES (?, ?, ?)", rows)
    assert migrate(conn, Statements()) == LATEST_VERSION
    found = conn.execute("SELECT remote, local_id, remote_id, origin FROM remote_origins ORDER BY remote, remote_id")
    assert found.fetchall() == [(a, rows[0][1], "ra-1", "pulled"), (a, rows[1][1], "ra-2", "pushed"),
                                (b, rows[2][1], "rb-1", "pushed")]
    # Run again on the file set back a version: what was recorded since stays (here: the memory pulled
    # from a, as if a push had created it there again as ra-9, which the id map alone cannot tell).
    with conn:
        conn.execute("UPDATE push_ids SET remote_id = 'ra-9' WHERE remote = ? AND remote_id = 'ra-1'", (a,))
        conn.execute("UPDATE remote_origins SET remote_id = 'ra-9' WHERE remote = ? AND remote_id = 'ra-1'", (a,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(BEFORE),))
    assert migrate(conn, Statements()) == LATEST_VERSION
    assert conn.execute("SELECT origin FROM remote_origins WHERE remote_id = 'ra-9'").fetchall() == [("pulled",)]
    assert conn.execute("SELECT count(*) FROM remote_origins").fetchone()[0] == 3
    conn.close()
