"""A conflict copy's marker (``metadata.sync_conflict.memory_id``, the memory it lost to) names that memory on
every store a push and a pull carry it to (issue 42 follow-up; pullsup12 wrote the gap down). The store that
makes the copy names the winner by its own id; push sent that id to AutoMem as it was, and pull brought it to
another store as it was, where it names nothing (the winner's id there derives from the server's id). So on
that store ``localmem forget ID`` of the winner left the copy, an earlier version of its text, behind. Now
push sends the server's id of the winner and pull names this store's; a marker an older push sent (a
store-local id the server does not know) is read as the memory the copy's ``superseded_by`` names, which a
copy's marker names too. Against the real AutoMem, as tests/test_pull.py (whose helpers these use)."""

from __future__ import annotations

import json
import subprocess
import sys

from localmem import MemoryStore
from localmem.replication.push_verify import compare
from test_pull import cli_env, counts, create, local_memories, pull, push, server  # noqa: F401 (a fixture)

FIRST = "the vault passphrase is in the blue notebook"
THEIRS = "the vault passphrase is kept by Ana"
MINE = "the vault passphrase is tulip-ladder-9"


def marker(memory: dict) -> str | None:
    return (memory["metadata"].get("sync_conflict") or {}).get("memory_id")


def conflict_on_store_zero(server, tmp_path):  # noqa: F811
    """Store 0 writes a memory and pushes it; store 1 pulls it, changes it and pushes; store 0 changes the same
    field and pulls: the server's version is current there and store 0's is kept as a conflict copy, which
    store 0 pushes. Returns (db0, db1, the memory's id on store 0)."""
    db0, db1 = tmp_path / "zero.db", tmp_path / "one.db"
    with MemoryStore(db0, embedder="hash") as zero:
        memory0 = zero.store(FIRST, tags=["vault"])
    assert push(db0, server)[0] == 0
    server.wait_idle()
    assert pull(db1, server)[0] == 0
    (memory1,) = [m["id"] for m in local_memories(db1) if m["content"] == FIRST]
    with MemoryStore(db1, embedder="hash") as one:
        one.update(memory1, content=THEIRS)
    assert push(db1, server)[0] == 0
    with MemoryStore(db0, embedder="hash") as zero:
        zero.update(memory0, content=MINE)
    server.wait_idle()
    code, pulled = pull(db0, server)
    assert code == 0 and pulled["conflicts"] == 1, pulled
    code, pushed = push(db0, server)
    assert code == 0 and pushed["memories"]["created"] == 1, pushed
    server.wait_idle()
    return db0, db1, memory0


def test_a_conflict_copy_pulled_into_another_store_names_that_stores_memory(server, tmp_path):  # noqa: F811
    db0, db1, memory0 = conflict_on_store_zero(server, tmp_path)
    code, pulled = pull(db1, server)
    assert code == 0 and counts(pulled) == {"created": 1, "unchanged": 1}, pulled
    one = {m["content"]: m for m in local_memories(db1)}
    memory1 = one[THEIRS]["id"]
    assert memory1 != memory0
    assert one[MINE]["metadata"]["superseded_by"] == memory1
    assert marker(one[MINE]) == memory1, one[MINE]["metadata"]
    # What the user meets: forgetting the memory on store 1 forgets every version of it there.
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db1), "--embedder", "hash", "--json",
                           "forget", memory1], env=cli_env(server.token), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["forgotten"] == 2 and [m["id"] for m in report["memories"]] == [memory1, one[MINE]["id"]], report
    # Store 0 keeps naming its own id, and a pull there finds nothing changed.
    zero = {m["content"]: m for m in local_memories(db0)}
    assert marker(zero[MINE]) == zero[THEIRS]["id"] == memory0
    code, again = pull(db0, server)
    assert code == 0 and counts(again) == {"unchanged": 2}, again


def test_the_server_gets_its_own_id_of_the_winner_and_push_verify_finds_no_difference(server, tmp_path):  # noqa: F811
    db0, _, memory0 = conflict_on_store_zero(server, tmp_path)
    listing = {n["content"]: n for n in server.client.get("/graph/snapshot", params={"limit": 0}).json()["nodes"]}
    winner = listing[MINE]["metadata"]["superseded_by"]
    assert listing[THEIRS]["id"] == winner != memory0
    assert marker(listing[MINE]) == winner, listing[MINE]["metadata"]
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db0), "--embedder", "hash", "push",
                           server.url, "--json", "--verify"], env=cli_env(server.token), capture_output=True,
                          text=True, timeout=300)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["memories"].get("updated", 0) == 0, report
    assert not [d for d in report["verify"].get("differences", []) if d.get("field") == "metadata"], report["verify"]


def test_a_marker_an_older_push_sent_is_read_as_the_memory_superseded_by_names(server, tmp_path):  # noqa: F811
    """The server holds a copy whose marker is another store's own id of the winner (a push before this
    change sent it so): a pull names this store's memory, the one ``superseded_by`` names."""
    db = tmp_path / "local.db"
    winner = create(server, THEIRS, tags=["vault"])
    create(server, MINE, tags=["vault"], metadata={
        "deprecated": True, "superseded_by": winner, "supersede_relation": "INVALIDATED_BY",
        "sync_conflict": {"memory_id": "0b5e3a5c-0000-4000-8000-000000000001", "kept_because": "changed on both"}})
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and counts(pulled) == {"created": 2}, pulled
    here = {m["content"]: m for m in local_memories(db)}
    assert marker(here[MINE]) == here[MINE]["metadata"]["superseded_by"] == here[THEIRS]["id"]
    code, again = pull(db, server)
    assert code == 0 and counts(again) == {"unchanged": 2}, again


def test_push_verify_reads_the_marker_through_the_id_map():
    row = {"id": "c0", "content": MINE, "type": "Context", "importance": 0.5, "confidence": 0.9,
           "timestamp": "2026-01-02T03:04:05+00:00", "t_valid": None, "t_invalid": None, "tags": "[]",
           "metadata": json.dumps({"superseded_by": "m0", "sync_conflict": {"memory_id": "m0", "kept_because": "x"}})}
    remote = {"content": MINE, "type": "Context", "importance": 0.5, "confidence": 0.9, "timestamp": row["timestamp"],
              "t_valid": None, "t_invalid": None, "tags": [],
              "metadata": {"superseded_by": "s0", "sync_conflict": {"memory_id": "s0", "kept_because": "x"}}}
    assert compare(row, remote, {"m0": "s0"}) == []
    assert [d["field"] for d in compare(row, remote, {"m0": "s9"})] == ["metadata"]
