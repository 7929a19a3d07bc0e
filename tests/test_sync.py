"""`localmem sync`: two (or three) store files merged both ways, by the rules in sync_rules.py."""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_rules import digest
from localmem.replication.sync_side import StoreSide

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def stores(tmp_path):
    opened: list[MemoryStore] = []

    def open_store(name: str) -> MemoryStore:
        store = MemoryStore(tmp_path / f"{name}.db", embedder="hash")
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def sync(a: MemoryStore, b: MemoryStore, **options):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), **options)


def state(store: MemoryStore) -> dict:
    """Everything two converged stores must agree on: memories (every synced field),
    edges, and what recall's current-state filter makes of each memory."""
    memories = {}
    for (memory_id,) in store.conn.execute("SELECT id FROM memories"):
        record = store.get(memory_id, with_edges=True)
        memories[memory_id] = (digest(record), record["state"]["status"])
    edges = sorted(store.conn.execute(
        "SELECT a.id, e.type, b.id, e.strength, e.updated_at, e.properties FROM edges e "
        "JOIN memories a ON a.pk = e.src JOIN memories b ON b.pk = e.dst"))
    return {"memories": memories, "edges": edges}


def later() -> None:
    time.sleep(0.002)  # versions order by updated_at: make "later" really later


def test_new_memories_and_edges_go_both_ways_and_a_second_sync_does_nothing(stores):
    a, b = stores("a"), stores("b")
    cat = a.store("The cat sleeps on the windowsill", tags=["pets"])
    mat = a.store("The windowsill has a woven mat")
    a.associate(cat, mat, "RELATES_TO", 0.7)
    dog = b.store("The dog wants a walk at seven", tags=["pets"])
    summary = sync(a, b)
    assert (summary.copied_to_peer, summary.copied_to_local, summary.edges_to_peer) == (2, 1, 1)
    assert state(a) == state(b)
    assert b.get(cat)["tags"] == ["pets"] and a.get(dog)["content"] == "The dog wants a walk at seven"
    pages: list[tuple[str, int]] = []
    again = sync(a, b, progress=lambda what, n: pages.append((what, n)))
    assert (again.copied_to_peer, again.copied_to_local, again.edges_to_peer, again.edges_to_local) == (0, 0, 0, 0)
    # What the first sync wrote on each side is not even read back: no echo to compare.
    assert pages == []
    # The copies are searchable on the other side: indexes were kept by the normal write path.
    assert b.recall("windowsill cat")["results"][0]["id"] == cat


def test_a_change_on_one_side_is_copied_and_fields_arrive_exactly(stores):
    a, b = stores("a"), stores("b")
    memory = a.store("Dentist on Tuesday", importance=0.4, metadata={"where": "town"})
    sync(a, b)
    later()
    b.update(memory, content="Dentist moved to Thursday", importance=0.9, tags=["health"])
    summary = sync(a, b)
    assert summary.copied_to_local == 1 and not summary.conflicts
    record = a.get(memory)
    assert (record["content"], record["importance"], record["tags"]) == ("Dentist moved to Thursday", 0.9, ["health"])
    assert record["updated_at"] == b.get(memory)["updated_at"]
    assert state(a) == state(b)


def test_either_side_may_run_the_next_sync_without_false_conflicts(stores):
    a, b = stores("a"), stores("b")
    memory = a.store("The plumber's number is on the fridge")
    sync(a, b)  # run from a
    later()
    b.update(memory, content="The plumber's number is in my phone")
    summary = sync(b, a)  # run from b: it knows the version both agreed on too
    assert not summary.conflicts and summary.copied_to_peer == 1
    assert a.get(memory)["content"] == "The plumber's number is in my phone"


def test_changed_on_both_sides_the_later_wins_and_the_other_is_kept_superseded(stores):
    a, b = stores("a"), stores("b")
    memory = a.store("Team meeting is in room 4")
    sync(a, b)
    a.update(memory, content="Team meeting is in room 5")
    later()
    b.update(memory, content="Team meeting is in room 6")
    summary = sync(a, b)
    assert len(summary.conflicts) == 1
    copy_id = summary.conflicts[0]["kept_as"]
    for store in (a, b):
        assert store.get(memory)["content"] == "Team meeting is in room 6"
        copy = store.get(copy_id, with_edges=True)
        assert copy["content"] == "Team meeting is in room 5"
        assert copy["state"]["status"] != "current"  # kept, but recall's current view hides it
        hits = [r["id"] for r in store.recall("team meeting room")["results"]]
        assert memory in hits and copy_id not in hits
    assert state(a) == state(b)
    assert not sync(a, b).conflicts  # settled


def test_a_delete_against_a_later_edit_keeps_the_edit_and_says_so(stores):
    a, b = stores("a"), stores("b")
    memory = a.store("Passport renewal form is in the drawer")
    sync(a, b)
    a.delete(memory)
    later()
    b.update(memory, content="Passport renewal form is in the blue folder")
    summary = sync(a, b)
    assert summary.edits_kept_over_deletes == [memory]
    assert a.get(memory)["content"] == "Passport renewal form is in the blue folder"
    assert state(a) == state(b)


def test_a_delete_after_the_last_edit_deletes_on_both_sides(stores):
    a, b = stores("a"), stores("b")
    memory = b.store("Old wifi password hint")
    sync(a, b)
    b.update(memory, content="Old wifi password hint, updated")
    sync(a, b)  # the delete below is made after the edit was seen
    later()
    a.delete(memory)
    summary = sync(a, b)
    assert summary.deleted_on_peer == 1 and not summary.edits_kept_over_deletes
    assert state(a) == state(b) and memory not in state(a)["memories"]


def test_an_edit_the_deleting_store_never_saw_survives_even_an_earlier_clock(stores):
    """Issue 42: against the version both last agreed on, an edit made since survives a delete,
    whichever clock reads later (on f49a3c6 the later delete won and the edit was lost)."""
    a, b = stores("a"), stores("b")
    memory = b.store("Old wifi password hint")
    sync(a, b)
    b.update(memory, content="Old wifi password hint, updated")
    later()
    a.delete(memory)
    summary = sync(a, b)
    assert summary.edits_kept_over_deletes == [memory]
    assert a.get(memory)["content"] == "Old wifi password hint, updated"
    assert state(a) == state(b)


def test_edges_merge_as_a_union_and_removals_travel(stores):
    a, b = stores("a"), stores("b")
    one, two, three = (a.store(text) for text in ("first note", "second note", "third note"))
    sync(a, b)
    a.associate(one, two, "RELATES_TO")
    b.associate(two, three, "LEADS_TO")
    sync(a, b)
    assert len(state(a)["edges"]) == 2 and state(a) == state(b)
    later()
    b.dissociate(one, two, "RELATES_TO")
    sync(a, b)
    assert [e[:3] for e in state(a)["edges"]] == [(two, "LEADS_TO", three)]
    later()
    a.associate(one, two, "RELATES_TO", 0.3)  # written after the removal: it comes back
    sync(b, a)
    assert len(state(b)["edges"]) == 2 and state(a) == state(b)


def test_a_supersession_made_on_either_side_is_kept(stores):
    a, b = stores("a"), stores("b")
    old = a.store("I live in Leeds")
    sync(a, b)
    new = b.supersede(old, "I live in York now")["memory_id"]
    sync(a, b)
    assert a.get(old, with_edges=True)["state"]["status"] != "current"
    assert [r["id"] for r in a.recall("where do I live")["results"]][:1] == [new]
    assert state(a) == state(b)


def test_three_stores_converge_in_any_order(stores):
    rng = random.Random(7)
    names = ["a", "b", "c"]
    base = stores("origin")
    seeds = [base.store(f"shared note {n} about topic {n % 3}") for n in range(6)]
    orders = list(itertools.permutations(range(3), 2))
    trial_orders = [orders, list(reversed(orders)), rng.sample(orders, len(orders))]
    for trial, order in enumerate(trial_orders):
        group = [stores(f"{name}{trial}") for name in names]
        for store in group:  # the same starting point in each trial
            sync(store, base)
        rng_ops = random.Random(11)
        for index, store in enumerate(group):
            later()
            target = seeds[rng_ops.randrange(len(seeds))]
            store.update(target, content=f"edited by {names[index]}")
            store.store(f"new note from {names[index]}", id=f"00000000-0000-4000-8000-00000000000{index}")
            if index == 1:
                store.delete(seeds[5])
            if index == 2:
                store.associate(seeds[0], seeds[1], "RELATES_TO")
        for _ in range(2):  # two rounds: what one pair learnt reaches the third
            for x, y in order:
                sync(group[x], group[y])
        snapshots = [state(store) for store in group]
        assert snapshots[0] == snapshots[1] == snapshots[2], f"order {order} did not converge"
        assert seeds[5] not in snapshots[0]["memories"]
        assert all(f"00000000-0000-4000-8000-00000000000{i}" in snapshots[0]["memories"] for i in range(3))


def test_dry_run_writes_nothing(stores):
    a, b = stores("a"), stores("b")
    a.store("only on a")
    b.store("only on b")
    before = (state(a), state(b))
    summary = sync(a, b, dry_run=True)
    assert (summary.copied_to_peer, summary.copied_to_local, summary.dry_run) == (1, 1, True)
    assert (state(a), state(b)) == before
    assert sync(a, b).copied_to_peer == 1  # and the marks did not move


def test_a_copy_of_the_same_file_is_refused_until_opened_as_a_store_of_its_own(tmp_path, stores):
    a = stores("a")
    a.store("something")
    a.close()
    shutil.copy(tmp_path / "a.db", tmp_path / "copy.db")
    with MemoryStore(tmp_path / "a.db", embedder="hash") as again, \
            MemoryStore(tmp_path / "copy.db", embedder="hash", read_only=True) as copy:
        with pytest.raises(Exception, match="same store identity"):  # read-only: not renewed
            sync_stores(StoreSide(again, "a"), StoreSide(copy, "copy"), dry_run=True)
    with MemoryStore(tmp_path / "a.db", embedder="hash") as again, \
            MemoryStore(tmp_path / "copy.db", embedder="hash") as copy:  # a copy: a new identity
        copy.store("written on the copy")
        summary = sync(again, copy)
        assert summary.copied_to_local == 1 and summary.conflicts == []
        assert sorted(row[0] for row in again.conn.execute("SELECT content FROM memories")) == [
            "something", "written on the copy"]


def test_a_damaged_peer_record_is_refused_by_name_and_the_rest_arrives(stores):
    a, b = stores("a"), stores("b")
    good = b.store("a perfectly good note")
    bad = b.store("a note about to be damaged")
    b.conn.execute("UPDATE memories SET importance = 7.5, tags = '[\"x\"' WHERE id = ?", (bad,))
    summary = sync(a, b)
    assert [item["id"] for item in summary.refused] == [bad]
    assert a.get(good)["content"] == "a perfectly good note"
    assert a.health()["indexes_agree"]


SYNC_THEN_DIE = """
import os, sys
from localmem import MemoryStore
from localmem.replication import sync_side
from localmem.replication.sync import sync_stores
sync_side.PAGE = 5
pages = []
def progress(what, count):
    pages.append(count)
    if len(pages) == int(sys.argv[3]):
        os._exit(9)  # killed: no cleanup, no commit of what was in flight
a = MemoryStore(sys.argv[1], embedder="hash"); b = MemoryStore(sys.argv[2], embedder="hash")
sync_stores(sync_side.StoreSide(a, "a"), sync_side.StoreSide(b, "b"), progress=progress)
"""


def test_a_sync_killed_midway_and_run_again_ends_as_one_uninterrupted_run(tmp_path):
    def build(prefix: str) -> tuple[Path, Path]:
        paths = tmp_path / f"{prefix}a.db", tmp_path / f"{prefix}b.db"
        with MemoryStore(paths[0], embedder="hash") as a, MemoryStore(paths[1], embedder="hash") as b:
            ids = [f"00000000-0000-4000-8000-{n:012d}" for n in range(40)]
            a.store_many([{"id": i, "content": f"note {n} on side a", "updated_at": "2026-01-01T00:00:00+00:00",
                           "timestamp": "2025-06-01T00:00:00+00:00"}
                          for n, i in enumerate(ids[:25])])
            b.store_many([{"id": i, "content": f"note {n} on side b", "updated_at": "2026-01-02T00:00:00+00:00",
                           "timestamp": "2025-06-01T00:00:00+00:00"}
                          for n, i in enumerate(ids[20:], start=20)])
            for n in range(0, 20, 2):
                a.associate(ids[n], ids[n + 1], "RELATES_TO", 0.5)
        return paths

    killed, whole = build("k"), build("w")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for die_after in (2, 5, 7):
        run = subprocess.run([sys.executable, "-c", SYNC_THEN_DIE, str(killed[0]), str(killed[1]), str(die_after)],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 9, run.stderr
    with MemoryStore(killed[0], embedder="hash") as a, MemoryStore(killed[1], embedder="hash") as b:
        sync(a, b)
        resumed = state(a)
        assert resumed == state(b)
    with MemoryStore(whole[0], embedder="hash") as a, MemoryStore(whole[1], embedder="hash") as b:
        sync(a, b)
        assert state(a) == state(b)
        # The same ids, contents and edges (edge times are made on each side and so differ).
        assert {k: v for k, v in resumed["memories"].items()} == state(a)["memories"]
        assert [e[:4] for e in resumed["edges"]] == [e[:4] for e in state(a)["edges"]]
    # 40 ids; 20-24 were written on both sides with no common version: each keeps a conflict copy.
    assert len(resumed["memories"]) == 45


def test_local_writers_during_a_sync_lose_nothing(tmp_path, stores):
    a, b = stores("a"), stores("b")
    b.store_many([{"content": f"peer note {n}"} for n in range(300)])
    written: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        with MemoryStore(tmp_path / "a.db", embedder="hash") as other:  # another connection on a
            n = 0
            while not stop.is_set() and n < 200:
                written.append(other.store(f"written during the sync {n}"))
                n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        sync(a, b)
    finally:
        stop.set()
        thread.join()
    sync(a, b)
    ids_b = set(state(b)["memories"])
    assert set(written) <= ids_b and len(ids_b) == 300 + len(written)
    assert state(a) == state(b)


def test_cli_sync_reports_as_json_and_refuses_its_own_file(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        a.store("from a")
        b.store("from b")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    base = [sys.executable, "-m", "localmem", "--db", str(tmp_path / "a.db")]
    run = subprocess.run([*base, "sync", str(tmp_path / "b.db"), "--json"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["copied_to_peer"], report["copied_to_local"]) == (1, 1)
    own = subprocess.run([*base, "sync", str(tmp_path / "a.db")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert own.returncode == 2 and "own file" in own.stderr
