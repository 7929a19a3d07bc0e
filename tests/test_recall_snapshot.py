"""A recall's read snapshot (Backend.recall_snapshot) reads the content generation once, and a
store's work aside runs on long-lived threads (storage/aside.py) that end with the store."""

from __future__ import annotations

import threading

import pytest

from localmem import Config
from localmem.storage.aside import THREAD_NAME, AsideThreads

from store_helpers import new_store
from test_query_aside import QUERY, OneRunHash, garden_store
from test_query_delta import delta_model

GENERATION = "What moves whenever a memory is written or deleted"
CONTENTS = [f"the garden party on Sunday number {i} went well" for i in range(30)]


def generation_reads(store, query, **params):
    """How many times one recall reads the content generation, and its answer's ids."""
    read: list[str] = []
    store.conn.exec_trace = lambda cursor, sql, bindings: read.append(sql) or True
    try:
        answer = store.recall(query, **params)
    finally:
        store.conn.exec_trace = None
    return sum(GENERATION in sql for sql in read), [r["id"] for r in answer["results"]]


def test_a_recall_reads_the_content_generation_once():
    store = new_store(config=Config(keyword_scope_idf=True))
    store.store_many([{"content": text, "tags": ["conv:1"]} for text in CONTENTS])
    reads, ids = generation_reads(store, "garden party on Sunday", tags=["conv:1"], limit=5)
    assert reads == 1 and len(ids) == 5
    reads, _ = generation_reads(store, "garden party on Sunday", tags=["conv:1"], limit=5)
    assert reads == 1  # read again by the next recall: a write may have come between


def test_another_connections_write_between_recalls_is_seen(tmp_path):
    path = str(tmp_path / "shared.db")
    reader, writer = new_store(path), new_store(path)
    writer.store_many([{"content": text} for text in CONTENTS[:3]])
    before = {r["id"] for r in reader.recall("quokka smiled", limit=10)["results"]}
    new_id = writer.store("The quokka smiled for the camera.")
    after = reader.recall("quokka smiled", limit=10)["results"]
    assert new_id not in before
    assert after[0]["id"] == new_id
    reader.close()
    writer.close()


def test_outside_a_recall_the_generation_is_read_each_time():
    store = new_store()
    store.store("a memory")
    backend = store.backend
    read: list[str] = []
    store.conn.exec_trace = lambda cursor, sql, bindings: read.append(sql) or True
    backend.content_cache()
    backend.content_cache()
    store.conn.exec_trace = None
    assert sum(GENERATION in sql for sql in read) == 2


def aside_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(THREAD_NAME)}


def test_recalls_reuse_the_stores_aside_threads_and_close_ends_them():
    before = aside_threads()
    store = garden_store(OneRunHash())
    store.learned_model = delta_model()
    store.store_many([{"content": text} for text in CONTENTS])  # a pool big enough to match aside
    for n in range(6):
        assert store.recall(f"{QUERY} {n}", adaptive_floor=False)["learned_rank"]["applied"] is True
    names = store.embedder.threads
    assert len(names) == 6 and all(name.startswith(THREAD_NAME) for name in names)
    ours = aside_threads() - before
    assert 1 <= len(ours) <= 2  # six encodings and six pools matched, on at most two threads
    store.close()
    for thread in ours:
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_work_aside_gives_its_result_or_raises_what_it_raised():
    aside = AsideThreads(1)
    assert aside.submit(sum, [1, 2, 3])() == 6

    def fail() -> None:
        raise ValueError("no model here")

    waiting = aside.submit(fail)
    with pytest.raises(ValueError, match="no model here"):
        waiting()
    aside.close()
    assert aside.submit(len, "four")() == 4  # after close, new threads are started
    aside.close()


def test_work_aside_while_the_interpreter_exits_is_done_on_the_callers_thread(monkeypatch):
    import concurrent.futures.thread as pool_threads

    aside = AsideThreads(1)
    monkeypatch.setattr(pool_threads, "_shutdown", True)  # as at exit: the pool takes no new work
    where: list[str] = []
    waiting = aside.submit(lambda: where.append(threading.current_thread().name) or 5)
    assert where == [threading.current_thread().name] and waiting() == 5
    failing = aside.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing()
    monkeypatch.setattr(pool_threads, "_shutdown", False)
    aside.close()
