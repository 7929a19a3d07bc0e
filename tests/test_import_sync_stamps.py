"""An import must not resurrect a memory the importing store deleted (issue 42's trust rule:
copies never lose or resurrect a memory).

An export carries each memory's sync stamp (the hybrid logical clock stamp of the version, which
names the store that made it), a digest of the version and what its store had seen of the memory
(``"sync"`` on each memory line). An import that creates that very version records it as the same
version, so an edit and a delete made after it on the importing store order after it and cover
it at the next sync, as they would had a sync brought it (docs/sync.md, "imports").
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from localmem import MemoryStore
from localmem.maintenance.export import dump_line, iter_export
from localmem.maintenance.importer import ImportLineError, import_jsonl
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from test_sync_hostile_remote import cli


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def export(store: MemoryStore) -> list[str]:
    return [dump_line(value) for value in iter_export(store)]


def content(store: MemoryStore, memory_id: str) -> str | None:
    row = store.conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return row[0] if row else None


def stamp(store: MemoryStore, memory_id: str) -> str | None:
    row = store.conn.execute("SELECT c.hlc FROM memory_changes AS c JOIN memories AS m ON m.pk = c.pk "
                             "WHERE m.id = ?", (memory_id,)).fetchone()
    return row[0] if row else None


def store_id(store: MemoryStore) -> str:
    return store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]


def stores(tmp_path, names: str = "ab", clock=None):
    return [MemoryStore(tmp_path / f"{name}.db", embedder="hash", clock=clock) for name in names]


def close(*opened: MemoryStore) -> None:
    for store in opened:
        store.close()


def stays_deleted(summary, *where: tuple[MemoryStore, str]) -> None:
    assert summary.edits_kept_over_deletes == [], summary
    for store, memory_id in where:
        assert content(store, memory_id) is None


# -- the story and its variants ------------------------------------------------------------


def test_a_memory_imported_edited_and_deleted_stays_deleted_on_both_stores(tmp_path):
    """The story: B imports A's export, edits the note and deletes it before ever syncing with
    A; their first sync must not bring A's version back."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the spare key is under the blue pot")
        import_jsonl(b, export(a))
        b.update(note, content="the spare key is with the neighbour")
        b.delete(note)
        summary = sync(a, b)
        stays_deleted(summary, (a, note), (b, note))
        assert sync(a, b).edits_kept_over_deletes == []  # and it stays so
        assert content(a, note) is None and content(b, note) is None
    finally:
        close(a, b)


def test_a_memory_imported_and_deleted_unedited_stays_deleted(tmp_path):
    """Without the edit (this held before stamps too: the same ``updated_at``)."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the gate code is 4417")
        import_jsonl(b, export(a))
        b.delete(note)
        stays_deleted(sync(a, b), (a, note), (b, note))
    finally:
        close(a, b)


def test_an_update_import_of_a_newer_version_then_edit_and_delete_stays_deleted(tmp_path):
    """``--update``: B holds an older export's version, A edits it, B imports A's newer export
    with update, edits it and deletes it: A's newer version stays deleted."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the boiler is serviced in March")
        import_jsonl(b, export(a))
        a.update(note, content="the boiler is serviced in April")
        result = import_jsonl(b, export(a), update=True)
        assert result.memory.updated == 1 and result.stamps.taken == 1
        b.update(note, content="the boiler is serviced in May")
        b.delete(note)
        stays_deleted(sync(a, b), (a, note), (b, note))
    finally:
        close(a, b)


def test_an_export_taken_before_a_delete_on_the_exporter_stays_deleted(tmp_path):
    """A exports, then deletes the note; B imports, edits and deletes it; C, which took A's version
    by a sync before A's delete, meets B first: nothing comes back anywhere."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the passport expires in 2031")
        sync(a, c)
        lines = export(a)
        a.delete(note)
        import_jsonl(b, lines)
        b.update(note, content="the passport expires in 2032")
        b.delete(note)
        stays_deleted(sync(b, c), (b, note), (c, note))
        stays_deleted(sync(a, b), (a, note), (b, note))
        stays_deleted(sync(a, c), (a, note), (c, note))
    finally:
        close(a, b, c)


def test_two_imports_of_the_same_export_are_one_version(tmp_path):
    """B and C import the same export; B edits and deletes the note: C's unedited import is the
    version B had seen, so it goes too, and A's with it."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = a.store("the bins go out on Tuesday")
        lines = export(a)
        import_jsonl(b, lines)
        import_jsonl(b, lines, skip_existing=True)  # the same export twice on one store
        import_jsonl(c, lines)
        b.update(note, content="the bins go out on Wednesday")
        b.delete(note)
        stays_deleted(sync(b, c), (b, note), (c, note))
        stays_deleted(sync(a, c), (a, note), (c, note))
        stays_deleted(sync(a, b), (a, note), (b, note))
    finally:
        close(a, b, c)


def test_a_stamp_naming_a_third_store_is_taken_and_covered_there_too(tmp_path):
    """A took the note from C by a sync, so A's export carries C's stamp: B's later delete covers
    C's version, and a sync of B with C deletes it there."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = c.store("the car insurance renews in June")
        sync(c, a)
        lines = export(a)
        assert json.loads(lines[1])["sync"]["stamp"].endswith(store_id(c))
        import_jsonl(b, lines)
        assert stamp(b, note) == stamp(c, note)
        b.update(note, content="the car insurance renews in July")
        b.delete(note)
        stays_deleted(sync(b, c), (b, note), (c, note))
        stays_deleted(sync(a, b), (a, note), (b, note))
    finally:
        close(a, b, c)


def test_an_edit_the_exporter_made_before_the_import_wins_the_first_sync(tmp_path):
    """A edits the note after its export and B imports the older export afterwards: the exported
    version keeps its own stamp, so A's later edit is the current version on both (a version of
    B's own, stamped at the import, won and set A back; with the stamp, A had seen B's version and
    the sync keeps no conflict copy of it: tests/test_sync_ancestors.py)."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the meeting is in room 4")
        lines = export(a)
        a.update(note, content="the meeting is in room 7")
        import_jsonl(b, lines)
        sync(a, b)
        assert content(a, note) == content(b, note) == "the meeting is in room 7"
    finally:
        close(a, b)


def test_what_the_exporter_had_seen_is_seen_by_the_importers_delete(tmp_path):
    """C writes the note and A takes it by a sync, then edits it and exports; B imports, edits and
    deletes it. C still holds its own older version (it never synced since): B's delete covers it,
    since the export carried what A had seen of the memory (C's version), and B took that in."""
    a, b, c = stores(tmp_path, "abc")
    try:
        note = c.store("the bike lock code is 2580")
        sync(c, a)
        a.update(note, content="the bike lock code is 2581")
        lines = export(a)
        assert json.loads(lines[1])["sync"]["seen"] == [[store_id(c), stamp(c, note)]]
        import_jsonl(b, lines)
        b.update(note, content="the bike lock code is 2582")
        b.delete(note)
        stays_deleted(sync(b, c), (b, note), (c, note))
        stays_deleted(sync(a, b), (a, note), (b, note))
        stays_deleted(sync(a, c), (a, note), (c, note))
    finally:
        close(a, b, c)


# -- files without stamps, and what an import does not take ----------------------------------


def test_an_export_without_stamps_imports_as_before(tmp_path):
    """``stamps=False`` (``export --no-sync-stamps``, for a localmem older than the field) writes no
    ``sync``; an import of it is a version of the importing store's own, as before, and the story
    then brings the exporting store's version back (docs/sync.md says so)."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the spare key is under the blue pot")
        lines = [dump_line(value) for value in iter_export(a, stamps=False)]
        assert all("sync" not in json.loads(line) for line in lines)
        result = import_jsonl(b, lines)
        assert result.stamps.taken == 0 and result.stamps.not_taken == {}
        assert stamp(b, note).endswith(store_id(b))
        b.update(note, content="the spare key is with the neighbour")
        b.delete(note)
        assert sync(a, b).edits_kept_over_deletes == [note]
    finally:
        close(a, b)


def test_export_import_export_gives_the_same_lines_with_stamps(tmp_path):
    a, b = stores(tmp_path)
    try:
        first = a.store("the dentist is on Friday")
        a.update(first, content="the dentist is on Thursday")
        a.store("the plumber comes at nine", tags=["house"])
        lines = export(a)
        import_jsonl(b, lines)
        assert export(b) == lines
    finally:
        close(a, b)


def with_sync(line: str, **changes) -> str:
    value = json.loads(line)
    value["sync"] = {**value["sync"], **changes}
    return json.dumps(value)


def future_stamp(hours: int, replica: str) -> str:
    wall = int((datetime.now(timezone.utc) + timedelta(hours=hours)).timestamp() * 1000)
    return f"{wall:015d}-0000000000-{replica}"


def clock_wall(store: MemoryStore) -> int:
    return store.conn.execute("SELECT hlc_wall FROM sync_clock WHERE id = 1").fetchone()[0]


@pytest.mark.parametrize("where", ["stamp", "seen"])
def test_a_stamp_far_ahead_is_not_taken_and_moves_no_clock(tmp_path, where):
    """A hand-made or skewed stamp more than 24 hours ahead: the line imports as a version of this
    store (as before), the import says so, and this store's clock stays where it was."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the lease ends in August")
        header, line = export(a)
        ahead = future_stamp(48, store_id(a))
        line = with_sync(line, stamp=ahead) if where == "stamp" else with_sync(line, seen=[[store_id(a), ahead]])
        result = import_jsonl(b, [header, line])
        assert result.memory.created == 1 and result.stamps.taken == 0
        assert result.stamps.not_taken == {"a stamp more than 24 hours ahead of this machine's clock": 1}
        assert stamp(b, note).endswith(store_id(b))
        assert clock_wall(b) < int(ahead[:15]) - 24 * 3600 * 1000
        assert b.conn.execute("SELECT count(*) FROM sync_seen WHERE id = ?", (note,)).fetchone()[0] == 0
    finally:
        close(a, b)


def test_a_stamp_within_the_skew_bound_is_taken_and_moves_the_clock(tmp_path):
    """An hour ahead is within the bound a sync accepts: taken, and an edit made after it orders after it."""
    a, b = stores(tmp_path)
    try:
        note = a.store("the lease ends in August")
        header, line = export(a)
        ahead = future_stamp(1, store_id(a))
        assert import_jsonl(b, [header, with_sync(line, stamp=ahead)]).stamps.taken == 1
        assert stamp(b, note) == ahead and clock_wall(b) >= int(ahead[:15])
        b.update(note, content="the lease ends in September")
        assert stamp(b, note) > ahead
    finally:
        close(a, b)


@pytest.mark.parametrize("bad, named", [
    ("not an object", "'sync' must be null or an object"),
    ({"stamp": "001"}, "'sync' must be null or an object"),
    ({"stamp": "001", "digest": "0" * 24}, "'sync.stamp' must be a clock stamp"),
    ({"stamp": "STAMP", "digest": "xyz"}, "'sync.digest' must be 24 hexadecimal characters"),
    ({"stamp": "STAMP", "digest": "0" * 24, "seen": [["someone", "STAMP"]]}, "'sync.seen' holds"),
    ({"stamp": "STAMP", "digest": "0" * 24, "seen": [["STAMP"]] * 30}, "'sync.seen' must be a list"),
    ({"stamp": "STAMP", "digest": "0" * 24, "extra": 1}, "'sync' must be null or an object"),
])
def test_a_malformed_sync_field_is_refused_by_name_and_nothing_is_written(tmp_path, bad, named):
    a, b = stores(tmp_path)
    try:
        a.store("the lease ends in August")
        header, line = export(a)
        value = json.loads(line)
        good = value["sync"]["stamp"]
        value["sync"] = json.loads(json.dumps(bad).replace("STAMP", good))
        with pytest.raises(ImportLineError) as raised:
            import_jsonl(b, [header, json.dumps(value)])
        assert "line 2" in str(raised.value) and named in str(raised.value)
        assert b.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    finally:
        close(a, b)


def test_a_stamp_claiming_the_importing_store_is_not_taken(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the lease ends in August")
        header, line = export(a)
        forged = json.loads(line)["sync"]["stamp"][:27] + store_id(b)
        result = import_jsonl(b, [header, with_sync(line, stamp=forged)])
        assert result.stamps.not_taken == {"a version made by this store": 1}
        assert stamp(b, note) != forged and stamp(b, note).endswith(store_id(b))
    finally:
        close(a, b)


def test_a_line_changed_after_its_export_is_not_taken_as_the_stamped_version(tmp_path):
    a, b = stores(tmp_path)
    try:
        note = a.store("the lease ends in August")
        header, line = export(a)
        value = json.loads(line)
        value["content"] = "the lease ends in December"
        result = import_jsonl(b, [header, json.dumps(value)])
        assert result.stamps.not_taken == {"the line is not the version its stamp names": 1}
        assert stamp(b, note).endswith(store_id(b))
    finally:
        close(a, b)


def test_a_line_without_its_id_is_a_new_memory_and_takes_no_stamp(tmp_path):
    a, b = stores(tmp_path)
    try:
        a.store("the lease ends in August")
        header, line = export(a)
        value = json.loads(line)
        del value["id"]
        result = import_jsonl(b, [header, json.dumps(value)])
        assert result.memory.created == 1
        assert result.stamps.not_taken == {"the line is not the version its stamp names": 1}
        assert [stamp(b, i).endswith(store_id(b)) for (i,) in b.conn.execute("SELECT id FROM memories")] == [True]
    finally:
        close(a, b)


def test_an_import_over_a_version_the_exporter_had_not_seen_or_after_a_delete_is_a_new_version(tmp_path):
    """``--update`` over an edit made here (a rollback the user asks for) and an import of a memory
    deleted here (a restore) are versions made here now, as before: the next sync carries them."""
    a, b = stores(tmp_path)
    try:
        edited = a.store("the lease ends in August")
        deleted = a.store("the alarm code is 1234")
        lines = export(a)
        import_jsonl(b, lines)
        b.update(edited, content="the lease ends in October")
        b.delete(deleted)
        result = import_jsonl(b, lines, update=True)
        assert result.stamps.taken == 0 and result.stamps.not_taken == {
            "deleted here before: the import is a new version, as a restore is": 1,
            "this store holds a version the exporting store had not seen": 1}
        assert content(b, edited) == "the lease ends in August" and content(b, deleted) is not None
        sync(a, b)
        assert content(a, deleted) == content(b, deleted) == "the alarm code is 1234"
        assert content(a, edited) == content(b, edited) == "the lease ends in August"
    finally:
        close(a, b)


def test_cli_export_without_stamps_and_the_import_note(tmp_path):
    """``export --no-sync-stamps`` writes no ``sync``; an import that does not take a stamp says so."""
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(source, embedder="hash") as a:
        a.store("the lease ends in August")
    plain = cli(source, "export", "--no-sync-stamps")
    assert plain.returncode == 0, plain.stderr
    assert all("sync" not in json.loads(line) for line in plain.stdout.splitlines())
    stamped = cli(source, "export").stdout.splitlines()
    changed = json.loads(stamped[1])
    changed["content"] = "the lease ends in May"
    path = tmp_path / "changed.jsonl"
    path.write_text(f"{stamped[0]}\n{json.dumps(changed)}\n", encoding="utf-8")
    shown = cli(target, "--embedder", "hash", "import", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "1 memory was written as new versions made here" in shown.stderr
    assert "the line is not the version its stamp names: 1" in shown.stderr
