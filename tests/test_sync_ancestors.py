"""A sync between two stores that never agreed on a memory makes no conflict copy of a version
the other store had seen and built on (issue 42's trust rule: copies never lose or resurrect a
memory, and a user should not have to clean up conflicts nobody made).

The story: laptop A exports, laptop B imports, A keeps editing, then A and B sync for the first
time. B never changed the memory: its version is the one A exported, which A had seen (it made it)
and edited since. Without a base between the two, every sync before this change took both sides
as changed and kept B's older version as a "conflict copy" on both. The same happened without an
import, when B took the version through a third store. A version B edited after the import is a
real conflict still, and a delete on either side is decided as before (docs/sync.md).
"""

from __future__ import annotations

import json

import pytest

from localmem import MemoryStore
from localmem.maintenance.importer import import_jsonl
from localmem.replication.hlc import MAX_SKEW_MS
from localmem.replication.seen import Seen
from localmem.replication.sync_rules import MemoryState, decide
from test_import_sync_stamps import close, content, export, stamp, stores, sync
from test_sync_hostile_remote import cli
from test_sync_http import TOKEN, remote_store, server  # noqa: F401 (a fixture)


def copies(store: MemoryStore) -> list[str]:
    """The texts of the conflict copies ``store`` holds."""
    return sorted(row[0] for row in store.conn.execute(
        "SELECT content FROM memories WHERE metadata ->> '$.sync_conflict.memory_id' IS NOT NULL"))


def no_conflict(summary, *held: MemoryStore) -> None:
    assert summary.conflicts == [], summary.conflicts
    for store in held:
        assert copies(store) == []


# -- the story ------------------------------------------------------------------------------


def test_an_import_the_exporter_edited_since_takes_the_edit_at_their_first_sync_without_a_conflict(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the meeting is in room 4")
        import_jsonl(b, export(a))
        a.update(note, content="the meeting is in room 7")
        summary = sync(a, b)
        no_conflict(summary, a, b)
        assert summary.copied_to_peer == 1  # A's edit went to B
        assert content(a, note) == content(b, note) == "the meeting is in room 7"
        assert stamp(a, note) == stamp(b, note)
        no_conflict(sync(b, a), a, b)  # and from the other side too, nothing more
    finally:
        close(a, b)


def test_the_same_run_from_the_importing_store(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the meeting is in room 4")
        import_jsonl(b, export(a))
        a.update(note, content="the meeting is in room 7")
        a.update(note, tags=["work"])
        no_conflict(sync(b, a), a, b)
        assert content(b, note) == "the meeting is in room 7" and b.get(note)["tags"] == ["work"]
    finally:
        close(a, b)


def test_the_story_through_the_cli(tmp_path):
    """Each step a `localmem` process: export on A, import on B, update on A, sync from B."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(a, embedder="hash") as store:
        note = store.store("the dentist is on Friday")
    exported = tmp_path / "a.jsonl"
    for db, args in ((a, ("export", str(exported))), (b, ("import", str(exported))),
                     (a, ("update", note, "--content", "the dentist is on Thursday"))):
        done = cli(db, "--embedder", "hash", *args)
        assert done.returncode == 0, done.stderr
    synced = cli(b, "--embedder", "hash", "sync", str(a), "--json")
    assert synced.returncode == 0, synced.stderr
    summary = json.loads(synced.stdout)
    assert summary["conflicts"] == [] and summary["copied_to_local"] == 1, summary
    for db in (a, b):
        with MemoryStore(db, embedder="hash") as store:
            assert content(store, note) == "the dentist is on Thursday" and copies(store) == []


def test_the_story_with_a_server_as_the_exporting_store(tmp_path, server):  # noqa: F811
    """The exporting store is a `localmem serve`: exported there, imported here, edited there
    (`PATCH`), then `localmem sync URL`: the summary travels over the wire as a file's does."""
    url, served = server
    exported = tmp_path / "server.jsonl"
    done = cli(served, "--embedder", "hash", "export", str(exported))
    assert done.returncode == 0, done.stderr
    note = json.loads(exported.read_text().splitlines()[1])["id"]
    laptop = tmp_path / "laptop.db"
    done = cli(laptop, "--embedder", "hash", "import", str(exported))
    assert done.returncode == 0, done.stderr
    with remote_store(url) as http:
        assert http.patch(f"/memory/{note}", json={"content": "a note edited on the server"}).status_code == 200
    synced = cli(laptop, "--embedder", "hash", "sync", url, "--token", TOKEN, "--json")
    assert synced.returncode == 0, synced.stderr
    summary = json.loads(synced.stdout)
    assert summary["conflicts"] == [] and summary["copied_to_local"] == 1, summary
    with MemoryStore(laptop, embedder="hash") as store:
        assert content(store, note) == "a note edited on the server" and copies(store) == []
    with MemoryStore(served, embedder="hash") as store:  # another local reader of the server's file
        assert content(store, note) == "a note edited on the server" and copies(store) == []


def test_an_edit_the_exporter_made_before_the_import_is_no_conflict_either(tmp_path):
    """B imports an older export after A's edit: A's edit had seen the exported version."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the meeting is in room 4")
        lines = export(a)
        a.update(note, content="the meeting is in room 7")
        import_jsonl(b, lines)
        no_conflict(sync(a, b), a, b)
        assert content(a, note) == content(b, note) == "the meeting is in room 7"
    finally:
        close(a, b)


def test_an_update_import_after_a_sync_then_an_edit_on_the_exporter_is_no_conflict(tmp_path):
    """With a base: A and B synced, A edits and exports, B imports it with ``--update`` (B's version
    now differs from the base), A edits again; their next sync copies A's edit."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the boiler is serviced in March")
        sync(a, b)
        a.update(note, content="the boiler is serviced in April")
        assert import_jsonl(b, export(a), update=True).stamps.taken == 1
        a.update(note, content="the boiler is serviced in May")
        no_conflict(sync(a, b), a, b)
        assert content(b, note) == "the boiler is serviced in May"
    finally:
        close(a, b)


def test_a_version_taken_through_a_third_store_and_edited_since_is_no_conflict(tmp_path):
    """No import at all: B took A's version through C; A edits; A and B sync for the first time."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the bins go out on Tuesday")
        sync(a, c)
        sync(c, b)
        a.update(note, content="the bins go out on Wednesday")
        no_conflict(sync(b, a), a, b)
        assert content(b, note) == "the bins go out on Wednesday"
        sync(a, c)  # and C, which never saw the edit, takes it as a plain copy too
        assert copies(c) == [] and content(c, note) == "the bins go out on Wednesday"
    finally:
        close(a, b, c)


def test_a_newer_version_that_came_back_through_a_third_store_is_no_conflict(tmp_path):
    """B imports A's export, C takes A's later edit from A, and B meets it through C."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the passport expires in 2031")
        import_jsonl(b, export(a))
        a.update(note, content="the passport expires in 2032")
        sync(a, c)
        no_conflict(sync(c, b), b, c)
        assert content(b, note) == "the passport expires in 2032"
    finally:
        close(a, b, c)


# -- what stays as it was: real conflicts, deletes ------------------------------------------


def test_an_import_edited_on_both_stores_stays_a_conflict_and_keeps_both(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the gate code is 4417")
        import_jsonl(b, export(a))
        b.update(note, content="the gate code is 4418")
        a.update(note, content="the gate code is 4419")
        summary = sync(a, b)
        assert [c["id"] for c in summary.conflicts] == [note]
        assert content(a, note) == content(b, note) == "the gate code is 4419"  # the later edit
        assert copies(a) == copies(b) == ["the gate code is 4418"]
    finally:
        close(a, b)


def test_an_edit_on_the_importer_only_is_copied_to_the_exporter(tmp_path):
    """The other way round: B edited its import, A did not change it: B's edit had seen A's version."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the lease ends in August")
        import_jsonl(b, export(a))
        b.update(note, content="the lease ends in September")
        no_conflict(sync(a, b), a, b)
        assert content(a, note) == "the lease ends in September"
    finally:
        close(a, b)


def test_an_edit_made_after_the_exporters_edit_reached_it_through_a_third_store_is_no_conflict(tmp_path):
    """B imports, takes A's edit through C, edits it: B's version is the latest, made having seen A's."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the car is serviced in June")
        import_jsonl(b, export(a))
        a.update(note, content="the car is serviced in July")
        sync(a, c)
        sync(c, b)
        b.update(note, content="the car is serviced in August")
        no_conflict(sync(a, b), a, b)
        assert content(a, note) == "the car is serviced in August"
    finally:
        close(a, b, c)


def test_a_delete_on_the_exporter_after_the_import_still_deletes_the_unedited_import(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the alarm code is 1234")
        import_jsonl(b, export(a))
        a.delete(note)
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [] and content(b, note) is None
    finally:
        close(a, b)


def test_an_exporters_edit_the_importer_deleted_without_seeing_survives(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the alarm code is 1234")
        import_jsonl(b, export(a))
        b.delete(note)
        a.update(note, content="the alarm code is 5678")
        summary = sync(a, b)
        assert summary.edits_kept_over_deletes == [note]
        assert content(a, note) == content(b, note) == "the alarm code is 5678"
    finally:
        close(a, b)


@pytest.mark.parametrize("c_meets_the_delete_first", [False, True])
def test_a_version_the_deleter_had_seen_stays_deleted_when_an_edit_is_kept_over_the_delete(
        tmp_path, c_meets_the_delete_first):
    """A edits a note (C takes it) and deletes it; B edits it without seeing either; A and B sync:
    B's edit is kept over the delete, and the merge joins the delete's summary into the memory's
    (it covers A's edit). C then meets B's edit: A's edit is one its deleter had seen, so it is not
    kept as a conflict copy; C's copy of it is overwritten (or, when C met the delete first, in
    C's trash). Nothing the user kept is lost: the version gone is the one A's user deleted."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the plan")
        sync(a, b), sync(a, c)
        a.update(note, content="the plan, edited on a and then deleted there")
        sync(a, c)
        a.delete(note)
        b.update(note, content="the plan, edited on b")
        if c_meets_the_delete_first:
            assert sync(a, c).deleted_on_peer == 1
        assert sync(a, b).edits_kept_over_deletes == [note]
        assert sync(b, c).conflicts == []
        for store in (a, b, c):
            assert content(store, note) == "the plan, edited on b" and copies(store) == []
    finally:
        close(a, b, c)


# -- the bounds: what does not count as having seen a version --------------------------------

NOW_MS = 1_796_457_350_403
ME, PEER, OTHER = "a" * 32, "b" * 32, "c" * 32


def at(wall: int, replica: str, counter: int = 0) -> str:
    return f"{wall:015d}-{counter:010d}-{replica}"


def state(text: str, hlc: str, seen: Seen = Seen()) -> MemoryState:
    record = {"id": "m", "content": text, "updated_at": "2026-12-06T10:00:00+00:00"}
    return MemoryState("m", record=record, hlc=hlc, seen=seen)


def decided(newer: MemoryState, older: MemoryState) -> str | None:
    return decide(newer, older, None, NOW_MS + MAX_SKEW_MS).note


def test_a_version_the_newer_sides_summary_covers_is_copied_over():
    older = state("v1", at(NOW_MS - 5000, OTHER))
    assert decided(state("v2", at(NOW_MS, ME), Seen((at(NOW_MS - 5000, OTHER),))), older) == "copied"
    assert decide(older, state("v2", at(NOW_MS, ME), Seen((at(NOW_MS - 4000, OTHER),))), None,
                  NOW_MS + MAX_SKEW_MS).note == "copied_back"


def test_a_version_covered_only_by_the_summarys_floor_stays_a_conflict():
    """Past 16 stores the oldest entries fold into a floor covering every store's stamps below it:
    that says nothing about this version, so it is kept (a conflict copy, not lost)."""
    older = state("v1", at(NOW_MS - 5000, OTHER))
    floor_only = Seen((), at(NOW_MS - 1000, PEER))
    assert decided(state("v2", at(NOW_MS, ME), floor_only), older) == "conflict"


def test_a_summary_entry_past_the_skew_bound_covers_nothing():
    ahead = NOW_MS + MAX_SKEW_MS + 3_600_000
    older = state("v1", at(NOW_MS - 5000, OTHER))
    assert decided(state("v2", at(NOW_MS, ME), Seen((at(ahead, OTHER),))), older) == "conflict"


def test_a_version_stamped_past_the_skew_bound_is_not_taken_as_newer():
    """A far-future stamp orders nothing (docs/sync.md), so it cannot be the version made later."""
    ahead = NOW_MS + MAX_SKEW_MS + 3_600_000
    older = state("v1", at(NOW_MS - 5000, OTHER))
    note = decided(state("v2", at(ahead, ME), Seen((at(NOW_MS - 5000, OTHER),))), older)
    assert note == "conflict"


def test_a_derived_stamp_says_nothing_about_what_was_seen():
    """Stamps derived for stores older than schema 15 share the all-zero store part: two stores'
    versions of one memory are not one store's history, so one does not cover the other."""
    zero = "0" * 32
    older = state("v1", at(NOW_MS - 5000, zero))
    assert decided(state("v2", at(NOW_MS, ME), Seen((at(NOW_MS - 1000, zero),))), older) == "conflict"


def test_a_covered_version_stamped_after_the_newer_one_stays_a_conflict():
    """A summary can cover a version taken in after the newer one was made (merged, or a delete's
    summary joined): that version is not an ancestor, and is decided by the clock as before."""
    later = state("v1", at(NOW_MS, OTHER))
    assert decided(state("v2", at(NOW_MS - 5000, ME), Seen((at(NOW_MS, OTHER),))), later) == "conflict"


def test_an_entry_for_another_store_covers_nothing_of_this_one():
    covered_by_another = Seen((at(NOW_MS - 1000, PEER),))
    older = state("v1", at(NOW_MS - 5000, OTHER))
    assert decided(state("v2", at(NOW_MS, ME), covered_by_another), older) == "conflict"
