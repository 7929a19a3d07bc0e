"""Two stores that each changed a memory the server deleted, the same way, send it back once (docs/push.md,
"Created again, once"). Found by the stateful push/pull model (seed 3055308988, "the server holds a memory twice"):
store A wrote a memory and pushed it, store B pulled it; both set its tags to the same value while another client
deleted it on the server; each pull kept its copy (A's written here, B's changed here since) and each push created
it there again: two equal memories on the server, which every store then pulled. Now the second push finds the
first one's copy (equal in every field, its timestamp included) and records it as its own instead of creating a
second; copies that differ are both kept, as before. Against the real AutoMem, the CLI as a subprocess."""

from __future__ import annotations

from pathlib import Path

from localmem import MemoryStore
from localmem.replication.push import Pusher
from localmem.replication.push_adopt import FILTERED_LOOKUPS
from localmem.replication.push_client import PushClient
from test_pull import create, local_memories, pull, push, run, server  # noqa: F401
from test_pull_provenance import listed

ROTA = "The on-call rota changes on Mondays"


def changed_in_both_then_deleted_there(server, tmp_path: Path, tags_a: list[str], tags_b: list[str]
                                       ) -> tuple[Path, Path]:
    """ROTA written in store A and pushed, pulled into store B; A sets its tags to ``tags_a`` and B to ``tags_b``
    while the server deletes it; both pulls keep their copy. Returns the two stores' files."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(a, embedder="hash") as store:
        store.store("A note that stays on the server", importance=0.5)
        rota = store.store(ROTA, tags=["team"], importance=0.4)
    assert push(a, server)[0] == 0
    server.wait_idle()
    assert pull(b, server)[0] == 0
    pulled = next(m["id"] for m in local_memories(b) if m["content"] == ROTA)
    with MemoryStore(a, embedder="hash") as store:
        store.update(rota, tags=tags_a)
    with MemoryStore(b, embedder="hash") as store:
        store.update(pulled, tags=tags_b)
    assert server.client.delete(f"/memory/{listed(server)[ROTA]}").status_code == 200
    for db in (a, b):
        code, summary = pull(db, server)
        assert code == 0 and summary["memories"]["deleted"] == 0, summary
    return a, b


def on_server(server) -> list[str]:
    nodes = server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]
    return sorted(n["content"] for n in nodes)


def test_the_same_change_made_in_two_stores_is_sent_back_once(server, tmp_path):
    a, b = changed_in_both_then_deleted_there(server, tmp_path, ["team", "oncall"], ["team", "oncall"])
    code, first = push(a, server)
    assert code == 0 and first["memories"]["created"] == 1, first
    server.wait_idle()
    code, second = push(b, server)
    assert code == 0 and second["memories"]["created"] == 0, second
    assert second["adopted"] == 1, second
    assert any("already there" in w and "not sent again" in w for w in second["warnings"]), second["warnings"]
    assert on_server(server) == ["A note that stays on the server", ROTA]
    for db in (a, b, a):
        code, summary = pull(db, server)
        assert code == 0, summary
        code, summary = push(db, server)
        assert code == 0 and summary["memories"]["created"] == 0, summary
    assert on_server(server) == ["A note that stays on the server", ROTA]
    for db in (a, b):
        assert sorted(m["content"] for m in local_memories(db)) == ["A note that stays on the server", ROTA]


def test_different_changes_are_both_sent_back(server, tmp_path):
    """docs/pull.md, Deletions: two machines that each changed it create one each."""
    a, b = changed_in_both_then_deleted_there(server, tmp_path, ["team", "oncall"], ["team", "pager"])
    for db in (a, b):
        code, summary = push(db, server)
        assert code == 0 and summary["memories"]["created"] == 1 and summary["adopted"] == 0, summary
        server.wait_idle()
    assert on_server(server) == ["A note that stays on the server", ROTA, ROTA]


class CountingClient(PushClient):
    """The real client, counting the listings it asks the server for."""

    listings = 0

    def get(self, route, **query):
        if route == "/graph/snapshot":
            self.listings += 1
        return super().get(route, **query)


def test_many_lost_memories_are_looked_up_with_a_bounded_number_of_listings(server, tmp_path):
    """Past FILTERED_LOOKUPS memories to look up, one listing of the whole server serves the rest: a push's
    requests do not grow with the number of memories the server lost."""
    count = FILTERED_LOOKUPS + 4
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(a, embedder="hash") as store:
        ids = [store.store(f"Lost note number {i}", tags=["team"], importance=0.4) for i in range(count)]
    assert push(a, server)[0] == 0
    server.wait_idle()
    assert pull(b, server)[0] == 0
    pulled = {m["content"]: m["id"] for m in local_memories(b)}
    with MemoryStore(a, embedder="hash") as store:
        for memory_id in ids:
            store.update(memory_id, tags=["team", "moved"])
    with MemoryStore(b, embedder="hash") as store:
        for i in range(count):
            store.update(pulled[f"Lost note number {i}"], tags=["team", "moved"])
    for remote_id in listed(server).values():
        assert server.client.delete(f"/memory/{remote_id}").status_code == 200
    for db in (a, b):
        code, summary = pull(db, server)
        assert code == 0 and summary["memories"]["deleted"] == 0, summary
    code, first = push(a, server)
    assert code == 0 and first["memories"]["created"] == count, first
    server.wait_idle()
    client = CountingClient(server.url, token=server.token)
    with MemoryStore(b, embedder="hash") as store:
        summary = Pusher(store, client).run()
    assert summary.adopted == count and summary.as_dict()["memories"]["created"] == 0, summary.as_dict()
    assert client.listings <= FILTERED_LOOKUPS + 2, client.listings  # the filtered ones, the whole one, a resume's
    assert on_server(server) == sorted(f"Lost note number {i}" for i in range(count))


def test_a_stopped_push_s_create_is_told_from_another_store_s_copy_pulled_here(server, tmp_path):
    """Two stores that pulled a memory hold it under the same local id (derived from the server's), so their copies
    of it created again there carry the same ``localmem_id`` marker. A push stopped after its create landed looks the
    create up by that marker next time: it found the other store's copy too, which this store had pulled as a memory
    of its own, took it for its create, deleted its real create as a duplicate, and failed recording it (``UNIQUE
    constraint failed: push_ids.remote, push_ids.remote_id``) on that push and on every later one (fresh stateful
    seed 893166738). A memory the store already knows under another local id is not its create."""
    create(server, ROTA, tags=["team"], importance=0.4)
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for db in (a, b):
        assert pull(db, server)[0] == 0
    shared = next(m["id"] for m in local_memories(a) if m["content"] == ROTA)
    assert shared == next(m["id"] for m in local_memories(b) if m["content"] == ROTA)
    for db, tags in ((a, ["team", "oncall"]), (b, ["team", "pager"])):
        with MemoryStore(db, embedder="hash") as store:
            store.update(shared, tags=tags)
    assert server.client.delete(f"/memory/{listed(server)[ROTA]}").status_code == 200
    for db in (a, b):
        assert pull(db, server)[0] == 0
    code, summary = push(b, server)  # B's copy, created again, carries the shared id as its marker
    assert code == 0 and summary["memories"]["created"] == 1, summary
    server.wait_idle()
    code, summary = pull(a, server)  # A takes it as a memory of its own (it differs from A's)
    assert code == 0 and summary["memories"]["created"] == 1, summary
    code, summary = run(a, "push", server.url, server.token, LOCALMEM_PUSH_TEST_CRASH_AFTER="1")
    assert code == 70, summary  # stopped right after its create of A's copy was answered, before recording it
    server.wait_idle()
    code, summary = push(a, server)
    assert code == 0 and summary["recovered"] == 1 and summary["duplicates_removed"] == 0, summary
    assert summary["memories"]["created"] == 0, summary
    assert on_server(server) == [ROTA, ROTA]
    assert sorted(sorted(m["tags"]) for m in local_memories(a)) == [["oncall", "team"], ["pager", "team"]]
