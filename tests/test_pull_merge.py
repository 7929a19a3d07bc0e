"""``localmem pull`` overwrites nothing unseen (issue 42, item 2), against the real AutoMem server:

* compare-and-set: a writer that edits a memory between the pull's read and its write (a
  second connection to the file, run from ``Puller.before_write``) keeps its edit, or has it
  kept as a conflict copy; a memory it keeps changing is skipped with a reason, never overwritten;
* a field changed both here and on the server keeps both versions: the server's is current,
  the local one a conflict copy (sync's), and push and pull agree on it afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.replication.pull import Puller
from localmem.replication.push_client import PushClient
from remote_servers import Server, automem
from test_pull import create, local_memories, pull, push


@pytest.fixture
def server(tmp_path_factory):
    with automem(tmp_path_factory.mktemp("automem-pull-merge")) as running:
        yield running


def pull_in_process(db: Path, server: Server, before_write: Any) -> dict[str, Any]:
    """One pull run in this process, with ``before_write`` called before each memory's write."""
    with PushClient(server.url, token=server.token) as client, MemoryStore(db, embedder="hash") as store:
        puller = Puller(store, client)
        puller.before_write = before_write
        return puller.run().as_dict()


def by_content(db: Path) -> dict[str, dict[str, Any]]:
    return {m["content"]: m for m in local_memories(db)}


def patch(server: Server, remote_id: str, **fields: Any) -> None:
    answer = server.client.patch(f"/memory/{remote_id}", json=fields)
    assert answer.status_code == 200, answer.text


def test_an_edit_made_between_the_pulls_read_and_its_write_survives(server, tmp_path):
    db = tmp_path / "local.db"
    other_field = create(server, "Standup moved to the small room", tags=["team"])
    same_field = create(server, "The release train leaves on Tuesdays", tags=["release"])
    doomed = create(server, "The old VPN endpoint is vpn1", tags=["ops"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 3
    ids = {m["content"]: m["id"] for m in local_memories(db)}
    patch(server, other_field, content="Standup moved to the big room")
    patch(server, same_field, content="The release train leaves on Wednesdays")
    assert server.client.delete(f"/memory/{doomed}").status_code == 200
    server.wait_idle()

    edits = {ids["Standup moved to the small room"]: {"tags": ["team", "office"]},
             ids["The release train leaves on Tuesdays"]: {"content": "The release train leaves on Thursdays"},
             ids["The old VPN endpoint is vpn1"]: {"importance": 0.95}}
    calls: list[str] = []

    def writer(local_id: str) -> None:  # another connection edits the memory the pull is about to write
        calls.append(local_id)
        if local_id in edits and calls.count(local_id) == 1:
            with MemoryStore(db, embedder="hash") as other:
                other.update(local_id, **edits[local_id])

    summary = pull_in_process(db, server, writer)
    assert summary["status"] == "success", summary
    assert summary["memories"]["deleted"] == 0, summary  # the one edited meanwhile is kept
    # Each memory edited meanwhile went round the merge a second time; the deletion is not retried.
    assert [calls.count(local_id) for local_id in edits] == [2, 2, 1], calls
    memories = by_content(db)
    # A different field: the server's content and the writer's tags, both.
    assert sorted(memories["Standup moved to the big room"]["tags"]) == ["office", "team"]
    # The same field: the server's version is current, the writer's edit kept as a conflict copy.
    assert memories["The release train leaves on Wednesdays"]["id"] == ids["The release train leaves on Tuesdays"]
    copy = memories["The release train leaves on Thursdays"]
    assert copy["metadata"]["superseded_by"] == ids["The release train leaves on Tuesdays"]
    assert copy["metadata"]["sync_conflict"]["memory_id"] == ids["The release train leaves on Tuesdays"]
    assert [(c["id"], c["kept_as"]) for c in summary["conflict_copies"]] == [
        (ids["The release train leaves on Tuesdays"], copy["id"])]
    # The delete on the server met an edit made here during the pull: kept, and said so.
    assert "The old VPN endpoint is vpn1" in memories
    assert any("deleted on the server were changed here" in w for w in summary["warnings"]), summary["warnings"]
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(ids["The old VPN endpoint is vpn1"])["importance"] == 0.95
        current = store.get(ids["The release train leaves on Tuesdays"], with_edges=True)
        assert current["state"]["status"] == "current"
        assert store.get(copy["id"], with_edges=True)["state"]["status"] == "superseded"

    # Every local edit goes to the server with the next push; a pull after it changes nothing.
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["updated"] == 1 and pushed["memories"]["created"] == 2, pushed
    server.wait_idle()
    listing = {n["content"]: n for n in server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]}
    assert "The release train leaves on Thursdays" in listing and "The old VPN endpoint is vpn1" in listing
    assert "office" in listing["Standup moved to the big room"]["tags"]
    code, again = pull(db, server)
    assert code == 0 and again["memories"]["updated"] == 0 and again["conflict_copies"] == [], again
    assert len(local_memories(db)) == 4


def test_a_memory_changed_here_in_every_round_is_skipped_with_a_reason_and_taken_later(server, tmp_path):
    db = tmp_path / "local.db"
    remote = create(server, "Lunch is at noon", tags=["office"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 1
    local_id = local_memories(db)[0]["id"]
    patch(server, remote, content="Lunch is at one")
    server.wait_idle()
    rounds: list[int] = []

    def busy_writer(memory_id: str) -> None:  # importance only: the server's content is no conflict
        rounds.append(1)
        with MemoryStore(db, embedder="hash") as other:
            other.update(memory_id, importance=round(0.1 * len(rounds), 1))

    summary = pull_in_process(db, server, busy_writer)
    assert len(rounds) == 3  # bounded: three rounds, then the memory is left for the next pull
    assert summary["status"] == "success" and summary["memories"]["updated"] == 0, summary
    [skipped] = summary["skipped"]
    assert skipped["id"] == local_id and "compare-and-set" in skipped["reason"]
    with MemoryStore(db, embedder="hash") as store:
        memory = store.get(local_id)
        assert (memory["content"], memory["importance"]) == ("Lunch is at noon", 0.3)  # the last edit stands
    code, later = pull(db, server)  # nothing writes now: the server's change arrives, the edit stays
    assert code == 0 and later["memories"]["updated"] == 1, later
    with MemoryStore(db, embedder="hash") as store:
        memory = store.get(local_id)
        assert (memory["content"], memory["importance"]) == ("Lunch is at one", 0.3)


def test_the_same_field_changed_on_both_sides_keeps_both_versions(server, tmp_path):
    """The server's version is current and the local one kept as a conflict copy, whichever side
    changed first (AutoMem's PATCH keeps updated_at: the time of its change is unknown); push
    sends the copy, and neither side makes another one afterwards."""
    db = tmp_path / "local.db"
    local_first = create(server, "The wiki lives on Confluence", tags=["docs"])
    server_first = create(server, "Builds run on Jenkins", tags=["ci"])
    server.wait_idle()
    assert pull(db, server)[1]["memories"]["created"] == 2
    ids = {m["content"]: m["id"] for m in local_memories(db)}
    patch(server, server_first, content="Builds run on GitHub Actions")  # the server first ...
    with MemoryStore(db, embedder="hash") as store:
        store.update(ids["Builds run on Jenkins"], content="Builds run on Buildkite", importance=0.9)  # ... then here
        store.update(ids["The wiki lives on Confluence"], tags=["docs", "notion"])  # here first ...
    patch(server, local_first, tags=["docs", "repository"])  # ... then the server
    server.wait_idle()

    code, pulled = pull(db, server)
    assert code == 0, pulled
    assert {(c["id"], tuple(c["fields"])) for c in pulled["conflict_copies"]} == {
        (ids["Builds run on Jenkins"], ("content",)), (ids["The wiki lives on Confluence"], ("tags",))}
    assert any("same field changed here and on the server" in w for w in pulled["warnings"])
    assert len(local_memories(db)) == 4
    with MemoryStore(db, embedder="hash") as store:
        builds = store.get(ids["Builds run on Jenkins"], with_edges=True)
        # The server's content is current; the importance changed only here stays (a different field).
        assert (builds["content"], builds["importance"], builds["state"]["status"]) == (
            "Builds run on GitHub Actions", 0.9, "current")
        wiki = store.get(ids["The wiki lives on Confluence"])
        assert sorted(wiki["tags"]) == ["docs", "repository"]
        copies = {c["id"]: store.get(c["kept_as"], with_edges=True) for c in pulled["conflict_copies"]}
        assert copies[ids["Builds run on Jenkins"]]["content"] == "Builds run on Buildkite"
        assert sorted(copies[ids["The wiki lives on Confluence"]]["tags"]) == ["docs", "notion"]
        for memory_id, copy in copies.items():
            assert copy["state"]["status"] == "superseded" and copy["state"]["superseded_by"] == memory_id
            assert copy["metadata"]["sync_conflict"]["kept_because"].startswith("changed in the same field")
            assert any(e["type"] == "INVALIDATED_BY" for e in copy["edges"]["outgoing"])
        found = [r["memory"]["content"] for r in store.recall("where do builds run", limit=5)["results"]]
        assert "Builds run on GitHub Actions" in found and "Builds run on Buildkite" not in found

    code, pushed = push(db, server)  # both copies, and the importance changed here, reach the server
    assert code == 0 and pushed["memories"]["created"] == 2 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    listed = {n["content"] for n in server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]}
    assert listed == {m["content"] for m in local_memories(db)}
    code, again = pull(db, server)
    assert code == 0 and again["conflict_copies"] == [] and again["memories"]["updated"] == 0, again
    assert len(local_memories(db)) == 4


def test_an_edit_made_to_a_pulled_memory_before_the_pull_records_it_is_pushed_not_lost(server, tmp_path):
    """A memory a pull has just created is recorded in a second transaction (so a killed pull
    resumes); an edit made in between is recorded as a local change, which the next push sends."""
    db = tmp_path / "local.db"
    remote = create(server, "The design review is on Monday", tags=["team"])
    server.wait_idle()
    edited: list[str] = []

    def writer(local_id: str) -> None:
        if not edited:
            edited.append(local_id)
            with MemoryStore(db, embedder="hash") as other:
                other.update(local_id, content="The design review is on Tuesday")

    summary = pull_in_process(db, server, writer)
    assert summary["memories"]["created"] == 1 and edited, summary
    assert [m["content"] for m in local_memories(db)] == ["The design review is on Tuesday"]
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    there = server.client.get(f"/memory/{remote}").json()["memory"]["content"]
    assert there == "The design review is on Tuesday"
    code, again = pull(db, server)
    assert code == 0 and again["memories"]["updated"] == 0 and again["conflict_copies"] == [], again


def test_a_memory_deleted_here_before_the_pull_records_it_stays_deleted_and_the_push_deletes_it_there(
        server, tmp_path):
    """Found by tests/test_pull_stateful.py: a memory a pull has just created and another process
    deletes before the pull records it was left out of the id map, so the next pull created it
    again (a delete undone) and no push ever deleted it on the server."""
    db = tmp_path / "local.db"
    remote = create(server, "The old build server is jenkins1", tags=["ops"])
    server.wait_idle()
    deleted: list[str] = []

    def writer(local_id: str) -> None:
        if not deleted:
            deleted.append(local_id)
            with MemoryStore(db, embedder="hash") as other:
                other.delete(local_id)

    summary = pull_in_process(db, server, writer)
    assert summary["status"] == "success" and deleted, summary
    assert local_memories(db) == []
    code, again = pull(db, server)
    assert code == 0 and again["memories"]["created"] == 0, again
    assert local_memories(db) == []
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["deleted"] == 1, pushed
    assert server.client.get(f"/memory/{remote}").status_code == 404


def test_a_field_edited_here_before_the_pull_records_a_new_memory_is_all_the_next_push_sends(server, tmp_path):
    """Found by tests/test_pull_stateful.py (seed 5): a memory edited here between a pull's write
    and its record was recorded with no field as the server's, so the next push sent every field
    and overwrote another client's change to a field not edited here."""
    db = tmp_path / "local.db"
    remote = create(server, "Expense reports are due on Fridays", tags=["finance"], importance=0.5)
    server.wait_idle()
    edited: list[str] = []

    def writer(local_id: str) -> None:
        if not edited:
            edited.append(local_id)
            with MemoryStore(db, embedder="hash") as other:
                other.update(local_id, tags=["finance", "deadline"])
            patch(server, remote, importance=0.8)  # another client, meanwhile, another field

    pull_in_process(db, server, writer)
    server.wait_idle()
    code, pushed = push(db, server)
    assert code == 0 and pushed["memories"]["updated"] == 1, pushed
    server.wait_idle()
    there = server.client.get(f"/memory/{remote}").json()["memory"]
    assert there["importance"] == 0.8 and {"finance", "deadline"} <= set(there["tags"]), there
