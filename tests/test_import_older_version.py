"""``import --update`` writing a file's older version over a newer stored one (issue 42).

An export keeps each memory's ``updated_at``; ``--update`` writes the line's fields, so an older
export written over a memory edited (or restored) since puts the older version back. That is what
a user restoring from an export asks for, and docs/sync.md relies on it (``trash restore``
followed by an ``--update`` import of the deleted version); it is not silent: the result counts
those memories and names them, and the CLI says so on stderr.

The first test is seed 742428944's reduced example (relinksync12, docs/results/history.md): such
an import writes back the very version a peer's unseen delete removed, which the next syncs put
in the trash, as docs/sync.md's import rule says.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from localmem import MemoryStore
from localmem.maintenance.export import dump_line, iter_export
from localmem.maintenance.importer import import_jsonl
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from localmem.trash import restore
from test_sync_hostile_remote import cli


def stores(folder: Path, skews: list[timedelta]) -> list[MemoryStore]:
    """Stores on clocks a millisecond a call apart, each shifted by its skew (as the stateful model's)."""
    ticks = [0]

    def clock(skew: timedelta):
        def now() -> datetime:
            ticks[0] += 1
            return datetime(2026, 1, 1, tzinfo=timezone.utc) + skew + timedelta(milliseconds=ticks[0])
        return now

    return [MemoryStore(folder / f"r{n}.db", embedder="hash", clock=clock(skew)) for n, skew in enumerate(skews)]


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)


def export(store: MemoryStore) -> list[str]:
    return [dump_line(value) for value in iter_export(store)]


def test_an_update_import_over_a_restore_of_the_version_an_unseen_delete_removed_goes_to_the_trash(tmp_path):
    r0, r1, r2 = stores(tmp_path, [timedelta(0), timedelta(hours=3), -timedelta(hours=2)])
    [memory] = r2.store_many([{"content": "t1 ha"}], dedup=False)
    sync(r2, r1)
    exported = export(r2)
    r2.delete(memory)  # not synced: r0 has not seen it
    import_jsonl(r0, exported, skip_existing=True)
    r1.delete(memory)
    sync(r1, r0)  # r1's delete, into r0's trash
    restore(r0, memory)  # an edit made now on r0
    restored = r0.get(memory)["updated_at"]
    result = import_jsonl(r0, exported, update=True)  # the exported version back over the restore
    assert r0.get(memory)["updated_at"] < restored
    assert result.older == [memory]
    for _ in range(2):
        for a, b in ((r0, r1), (r1, r2), (r0, r2)):
            sync(a, b)
    # The version written is the one r2 deleted: r2's delete covers it (docs/sync.md), on every store.
    for store in (r0, r1, r2):
        assert not list(store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory,)))
    # In the trash where a sync deleted it (r2 deleted it itself), from where `trash restore` brings it back.
    assert [[row[0] for row in store.conn.execute("SELECT id FROM trash")] for store in (r0, r1, r2)] == [
        [memory], [memory], []]
    for store in (r0, r1, r2):
        store.close()


def test_an_update_import_over_a_restore_without_the_unseen_delete_keeps_the_memory(tmp_path):
    """The same steps with no delete on r2: the imported version is r2's and nobody deleted it."""
    r0, r1, r2 = stores(tmp_path, [timedelta(0), timedelta(hours=3), -timedelta(hours=2)])
    [memory] = r2.store_many([{"content": "t1 ha"}], dedup=False)
    sync(r2, r1)
    exported = export(r2)
    import_jsonl(r0, exported, skip_existing=True)
    r1.delete(memory)
    sync(r1, r0)
    restore(r0, memory)
    import_jsonl(r0, exported, update=True)
    for _ in range(2):
        for a, b in ((r0, r1), (r1, r2), (r0, r2)):
            sync(a, b)
    for store in (r0, r1, r2):
        assert store.get(memory)["content"] == "t1 ha"
    for store in (r0, r1, r2):
        store.close()


def test_update_import_counts_and_names_the_memories_it_set_back_to_an_older_version(tmp_path):
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        old, same, newer = (store.store(f"note {n}") for n in range(3))
        exported = export(store)
        store.update(old, content="note 0, edited since the export")
        lines = [json.loads(line) for line in exported]
        for line in lines:  # a file written later than the store's version: not older
            if line.get("id") == newer:
                line["content"], line["updated_at"] = "note 2, newer in the file", "2999-01-01T00:00:00Z"
        result = import_jsonl(store, [dump_line(line) for line in lines], update=True)
        assert result.memory.updated == 2 and result.memory.unchanged == 1
        assert result.older == [old]
        assert result.as_dict()["older_than_stored"] == {"count": 1, "ids": [old]}
        assert store.get(old)["content"] == "note 0" and store.get(same)["content"] == "note 1"
        again = import_jsonl(store, exported, skip_existing=True)
        assert again.older == [] and again.as_dict()["older_than_stored"] == {"count": 0, "ids": []}


def test_cli_import_update_says_on_stderr_which_memories_went_back_to_an_older_version(tmp_path):
    db, path = tmp_path / "m.db", tmp_path / "export.jsonl"
    with MemoryStore(db, embedder="hash") as store:
        memory = store.store("the offsite is in Lisbon")
        kept = store.store("the budget is set")
        path.write_text("".join(line + "\n" for line in export(store)), encoding="utf-8")
        store.update(memory, content="the offsite is in Porto")
    shown = cli(db, "import", str(path), "--update")
    assert shown.returncode == 0, shown.stderr
    assert "1 memory set back to an older version" in shown.stderr and memory in shown.stderr
    assert kept not in shown.stderr
    answer = cli(db, "--json", "import", str(path), "--update")  # now identical: nothing set back
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["older_than_stored"] == {"count": 0, "ids": []}
    assert "older version" not in answer.stderr
