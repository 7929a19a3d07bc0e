"""Clocks that disagree decide nothing a base can decide (issue 42, item 1, in part).

A sync compares a deleted memory's surviving record with the version both stores last agreed
on: unchanged since then, the delete wins; edited since then, the edit survives. On f49a3c6 the
wall clocks decided, and each test here lost an edit or brought back a deleted memory.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide

HOUR = timedelta(hours=1)


def sync(a: MemoryStore, b: MemoryStore):
    return sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))


@pytest.fixture
def laptops(tmp_path):
    """Two stores; ``ahead`` reads its clock an hour ahead of ``behind``."""
    ahead = MemoryStore(tmp_path / "ahead.db", embedder="hash", clock=lambda: datetime.now(timezone.utc) + HOUR)
    behind = MemoryStore(tmp_path / "behind.db", embedder="hash")
    yield ahead, behind
    ahead.close()
    behind.close()


def skewed_delete(store: MemoryStore, memory_id: str, skew: timedelta) -> None:
    """Delete, stamped as a machine whose clock is off by ``skew`` would stamp it."""
    store.delete(memory_id)
    row = store.conn.execute("SELECT deleted_at FROM sync_tombstones WHERE id = ?", (memory_id,)).fetchone()
    shifted = datetime.fromisoformat(row[0]) + skew
    store.conn.execute("UPDATE sync_tombstones SET deleted_at = ? WHERE id = ?", (shifted.isoformat(), memory_id))


def ids(store: MemoryStore) -> set[str]:
    return {row[0] for row in store.conn.execute("SELECT id FROM memories")}


def test_a_delete_from_a_clock_an_hour_ahead_does_not_beat_a_later_edit(laptops):
    ahead, behind = laptops
    memory = behind.store("The rota moves to Thursdays")
    sync(ahead, behind)
    skewed_delete(ahead, memory, HOUR)  # deleted first, stamped an hour ahead
    behind.update(memory, content="The rota moves to Thursdays from May")  # edited after it
    summary = sync(ahead, behind)
    assert summary.edits_kept_over_deletes == [memory]
    for store in (ahead, behind):
        assert store.get(memory)["content"] == "The rota moves to Thursdays from May"


def test_an_untouched_memory_deleted_behind_a_clock_ahead_stays_deleted(laptops):
    ahead, behind = laptops
    memory = ahead.store("Parking is on level 3")  # stamped an hour ahead
    sync(ahead, behind)
    behind.delete(memory)  # stamped now: earlier than the record's own time
    summary = sync(ahead, behind)
    assert summary.deleted_on_local == 1 and summary.edits_kept_over_deletes == []
    assert memory not in ids(ahead) | ids(behind)
    sync(ahead, behind)
    assert memory not in ids(ahead) | ids(behind)


def test_a_memory_stamped_9999_is_deleted_for_good(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = a.store("A note from the far future", updated_at="9999-12-31T23:59:59+00:00")
        sync(a, b)
        a.delete(memory)
        for round_ in range(3):  # on f49a3c6 it came back on the first round, and every round after
            sync(a, b)
            assert memory not in ids(a) | ids(b), round_
