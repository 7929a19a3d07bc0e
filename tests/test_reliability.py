"""Many processes on one file, and crashes: nothing lost, nothing half-written, no "database is locked".

The short versions of ``benchmarks/safety/stress_concurrency.py`` (4 writer + 4 reader processes +
the HTTP server, ~8 s here) and ``benchmarks/safety/crash_import.py`` (kill -9 during an import),
plus deterministic tests of each mechanism: writers queue for the lock instead of failing,
a lock held past the timeout is a clear ``StorageError``, an update merges onto what
another process wrote meanwhile, recall holds no write lock, and checkpoints bound the WAL.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import apsw
import pytest

from localmem import MemoryStore, StorageError
from localmem.storage.database import (
    CHECKPOINT_WAIT_MS,
    WAL_AUTOCHECKPOINT_PAGES,
    WAL_TRUNCATE_BYTES,
    set_lock_wait,
)
from localmem.embedders import HashEmbedder
from tests.store_helpers import assert_consistent, snapshot

MIB = 1024 * 1024


def open_store(path: str, **kwargs: Any) -> MemoryStore:
    return MemoryStore(path, embedder=kwargs.pop("embedder", "hash"), **kwargs)


# -- writers queue for the lock --------------------------------------------------------------------


def test_writer_waits_for_the_lock_instead_of_failing(tmp_path):
    """``store`` reads (its id check) before it writes. In a deferred transaction the upgrade
    to a write fails at once while another connection holds the write lock; with
    ``BEGIN IMMEDIATE`` it waits on the busy handler and succeeds."""
    path = str(tmp_path / "m.db")
    holder, waiter = open_store(path), open_store(path)
    try:
        holder.conn.execute("BEGIN IMMEDIATE")
        holder.conn.execute("INSERT INTO meta (key, value) VALUES ('held', '1')")
        result: dict[str, Any] = {}

        def store() -> None:
            start = time.perf_counter()
            try:
                result["id"] = waiter.store("written while another process held the lock")
            except Exception as exc:
                result["error"] = exc
            result["waited"] = time.perf_counter() - start

        thread = threading.Thread(target=store)
        thread.start()
        time.sleep(0.4)
        assert thread.is_alive(), result  # still waiting, not failed
        holder.conn.execute("COMMIT")
        thread.join(10)
        assert "error" not in result, result
        assert result["waited"] >= 0.35
        assert holder.get(result["id"])["content"] == "written while another process held the lock"
        # The same holds for a bare `with conn:` (the connection's transaction mode).
        assert waiter.conn.transaction_mode == "IMMEDIATE"
    finally:
        holder.close()
        waiter.close()


def test_lock_held_past_the_timeout_is_a_clear_storage_error(tmp_path):
    path = str(tmp_path / "m.db")
    holder, waiter = open_store(path), open_store(path)
    try:
        waiter.store("before")
        before = snapshot(waiter)
        set_lock_wait(waiter.conn, 200)
        holder.conn.execute("BEGIN IMMEDIATE")
        start = time.perf_counter()
        with pytest.raises(StorageError) as excinfo:
            waiter.store("blocked")
        assert 0.15 < time.perf_counter() - start < 5
        assert excinfo.value.code == 503 and "busy" in excinfo.value.message
        assert "nothing was changed" in excinfo.value.message
        holder.conn.execute("ROLLBACK")
        assert snapshot(waiter) == before
        # Recall still answers while another process holds the write lock; only its
        # last_accessed write is skipped (after a bounded wait).
        holder.conn.execute("BEGIN IMMEDIATE")
        start = time.perf_counter()
        assert waiter.recall("before")["count"] == 1
        assert time.perf_counter() - start < 2
        holder.conn.execute("ROLLBACK")
    finally:
        holder.close()
        waiter.close()


class _Interleaving:
    """An embedder that lets another process write while this one is embedding (outside its
    transaction), to interleave two updates of the same memory deterministically."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dimensions = self.inner.name, self.inner.dimensions
        self.during_embed: Any = None

    def embed(self, texts: list[str]) -> Any:
        if self.during_embed is not None:
            action, self.during_embed = self.during_embed, None
            action()
        return self.inner.embed(texts)


def test_update_merges_onto_what_another_process_wrote_meanwhile(tmp_path):
    path = str(tmp_path / "m.db")
    embedder = _Interleaving()
    first = open_store(path, embedder=embedder)
    second = open_store(path)
    try:
        memory_id = first.store("Original text about caches", tags=["a"], importance=0.5)
        embedder.during_embed = lambda: second.update(memory_id, importance=0.9, tags=["b"])
        record = first.update(memory_id, content="Rewritten text about queues")
        assert record["content"] == "Rewritten text about queues"
        assert record["importance"] == 0.9 and record["tags"] == ["b"]  # not overwritten by stale values
        assert_consistent(first)
        assert first.recall("queues")["results"][0]["id"] == memory_id
        # A delete in between makes the update a clean NotFound, with nothing written.
        embedder.during_embed = lambda: second.delete(memory_id)
        before_error = None
        try:
            first.update(memory_id, content="Too late")
        except Exception as exc:
            before_error = exc
        assert type(before_error).__name__ == "NotFoundError"
        assert first.health()["memory_count"] == 0
        assert_consistent(first)
    finally:
        first.close()
        second.close()


# -- recall holds no write lock --------------------------------------------------------------------


class _SlowQueries:
    """Embeds stored texts at once, but blocks on a recall's query until released."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dimensions = self.inner.name, self.inner.dimensions
        self.entered, self.release = threading.Event(), threading.Event()

    def embed(self, texts: list[str]) -> Any:
        if texts == ["slow recall"]:
            self.entered.set()
            self.release.wait(10)
        return self.inner.embed(texts)


def test_recall_holds_no_write_lock_and_touches_afterwards(tmp_path):
    path = str(tmp_path / "m.db")
    embedder = _SlowQueries()
    reader, writer = open_store(path, embedder=embedder), open_store(path)
    try:
        memory_id = writer.store("slow recall target", last_accessed="2020-01-01T00:00:00+00:00")
        thread = threading.Thread(target=lambda: reader.recall("slow recall"))
        thread.start()
        assert embedder.entered.wait(10)
        start = time.perf_counter()
        writer.store("written during the recall")  # the write lock is free mid-recall
        assert time.perf_counter() - start < 0.5
        embedder.release.set()
        thread.join(10)
        assert writer.get(memory_id)["last_accessed"] > "2024"  # touched after the snapshot ended
    finally:
        reader.close()
        writer.close()


# -- checkpoints keep the WAL bounded ---------------------------------------------------------------


def _write_megabytes(store: MemoryStore, megabytes: int, sizes: list[int]) -> None:
    store.conn.execute("CREATE TABLE IF NOT EXISTS scratch (x BLOB)")
    for _ in range(megabytes):
        with store.conn:
            store.conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 128) "
                               "INSERT INTO scratch SELECT randomblob(8000) FROM n")  # ~1 MiB
        sizes.append(os.path.getsize(store.path + "-wal"))


def test_checkpoints_keep_the_wal_bounded(tmp_path):
    path = str(tmp_path / "m.db")
    store = open_store(path)
    assert store.conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 32 * MIB
    page = store.conn.execute("PRAGMA page_size").fetchone()[0]
    passive_bytes = WAL_AUTOCHECKPOINT_PAGES * page
    try:
        # No readers: PASSIVE checkpoints let the WAL restart; it stays near 8 MiB.
        sizes: list[int] = []
        _write_megabytes(store, 48, sizes)
        assert max(sizes) <= passive_bytes + 2 * MIB, max(sizes) / MIB
        # A reader that keeps one snapshot open stops every checkpoint: the WAL grows...
        reader = apsw.Connection(path)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memories").fetchall()
        sizes = []
        _write_megabytes(store, 40, sizes)
        assert max(sizes) > WAL_TRUNCATE_BYTES
        # ...until it lets go: the next checkpoint (TRUNCATE, waiting at most
        # CHECKPOINT_WAIT_MS for readers) brings it back under the bound.
        reader.execute("COMMIT")
        reader.close()
        sizes = []
        _write_megabytes(store, 12, sizes)
        assert sizes[-1] <= passive_bytes + 2 * MIB, sizes[-1] / MIB
        assert CHECKPOINT_WAIT_MS <= 500
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        store.close()


# -- the short stress runs ---------------------------------------------------------------------------


def test_four_writers_four_readers_and_the_http_server(tmp_path):
    pytest.importorskip("uvicorn")
    pytest.importorskip("httpx")
    from benchmarks.common.reliability_harness import run_concurrency

    figures = run_concurrency(8, seed_memories=100, workdir=str(tmp_path), log=lambda *_: None)
    verify = figures["verify"]
    summary = {k: figures[k] for k in ("writer_ops", "reader_ops", "http_requests", "locked_errors",
                                       "other_errors", "error_samples", "max_wal_bytes")}
    assert figures["writer_ops"] > 100 and figures["reader_ops"] > 20 and figures["http_requests"] > 20, summary
    assert figures["locked_errors"] == 0 and figures["other_errors"] == 0, summary
    assert figures["crashed_workers"] == 0
    assert all(int(status) < 500 for status in figures["http_statuses"]), figures["http_statuses"]
    assert verify["data_lost"] == 0, verify
    assert verify["unacknowledged_extra"] == 0, verify
    assert verify["doctor_problems"] == [] and verify["integrity"] == ["ok"] and verify["recall_after"]
    assert figures["health_drift_seen"] == 0
    assert figures["max_wal_bytes"] < WAL_TRUNCATE_BYTES + 16 * MIB
    assert figures["reader_touch_lock_hold"]["max_ms"] < 1000


def test_kill_nine_during_import(tmp_path):
    from benchmarks.common.reliability_harness import run_cli_crash, run_crash

    # 24 chunks: every kill but the last has several chunks to spare, so a calibration slowed by a busy machine
    # (a longer random delay) still kills mid-import; with 12 the second kill could land after the last chunk.
    crash = run_crash(4, memories=2400, batch=100, workdir=str(tmp_path / "api"), log=lambda *_: None)
    assert crash["kills_mid_import"] >= 3
    assert crash["missing_acknowledged"] == 0 and crash["partial_batches"] == 0
    assert crash["doctor_problems"] == 0 and crash["recall_failures"] == 0
    assert crash["final_integrity"] == ["ok"]
    cli = run_cli_crash(2, memories=1200, batch=100, workdir=str(tmp_path / "cli"), log=lambda *_: None)
    assert cli["went_down"] == 0 and cli["partial_batches"] == 0 and cli["doctor_problems"] == 0
    assert cli["recall_failures"] == 0 and cli["final_integrity"] == ["ok"]
