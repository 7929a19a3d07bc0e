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
