"""prepare_many: a batch embedded without the store's lock, then written by store_many_checked."""

from __future__ import annotations

import threading

import pytest

from localmem import MemoryStore
from localmem.embedders.hashing import HashEmbedder
from localmem.errors import ValidationError


class GatedEmbedder:
    """The hash embedder, except that a text holding ``SLOW`` waits for ``gate`` (a model mid-batch)."""

    name = "gated-hash"

    def __init__(self) -> None:
        self.inner = HashEmbedder(64)
        self.dimensions = self.inner.dimensions
        self.gate, self.entered = threading.Event(), threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if any("SLOW" in text for text in texts):
            self.entered.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return self.inner.embed(texts)


def test_a_recall_is_answered_while_a_prepared_batch_is_being_embedded(tmp_path):
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly", tags=["project:orchid"])
        prepared: dict = {}
        worker = threading.Thread(target=lambda: prepared.update(
            batch=store.prepare_many([{"content": "SLOW: a long assistant answer about orchid"},
                                      {"content": "orchid uses postgres"}])))
        worker.start()
        try:
            assert embedder.entered.wait(30)
            answered = {}
            reader = threading.Thread(target=lambda: answered.update(r=store.recall("orchid deploys", limit=3)))
            reader.start()
            reader.join(20)
            # The model is mid-batch: the store's lock is free, so the recall was answered meanwhile.
            assert not reader.is_alive() and answered["r"]["results"], "recall waited for the model"
        finally:
            embedder.gate.set()
            worker.join(30)
        results = store.store_many_checked(prepared["batch"], dedup=True)
        assert [r["deduped"] for r in results] == [False, False]
        stored = store.get(results[1]["id"])
        assert stored["content"] == "orchid uses postgres"
        found = store.recall("orchid postgres", limit=5)["results"]
        assert results[1]["id"] in [r["memory"]["id"] for r in found]


def test_a_prepared_batch_is_written_as_store_many_checked_writes_items(tmp_path):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        a.store("orchid uses postgres", id="7a8b5a6e-1d6f-4a55-9d0c-0f1a2b3c4d5e")
        b.store("orchid uses postgres", id="7a8b5a6e-1d6f-4a55-9d0c-0f1a2b3c4d5e")
        items = [{"content": "orchid uses postgres"}, {"content": "deploy with password=hunter2hunter2 tonight"},
                 {"content": "the cache is redis"}]
        direct = a.store_many_checked(items, dedup=True, redact=True)
        prepared = b.prepare_many(items, redact=True)
        through = b.store_many_checked(prepared, dedup=True, redact=True)
        assert [r["deduped"] for r in through] == [r["deduped"] for r in direct] == [True, False, False]
        for x, y in zip(direct[1:], through[1:]):
            got_a, got_b = a.get(x["id"]), b.get(y["id"])
            assert got_a["content"] == got_b["content"] and "hunter2" not in got_b["content"]
            assert got_a["metadata"] == got_b["metadata"]
        # A subset writes only the items kept, in that order.
        later = b.prepare_many([{"content": "first"}, {"content": "second"}, {"content": "third"}])
        kept = b.store_many_checked(later.subset([2, 0]), dedup=False)
        assert [b.get(r["id"])["content"] for r in kept] == ["third", "first"]


def test_redact_asked_at_the_write_of_a_batch_prepared_without_it_is_refused(tmp_path):
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        prepared = store.prepare_many([{"content": "token=abcdefabcdefabcdef1234"}])
        with pytest.raises(ValidationError, match="redact"):
            store.store_many_checked(prepared, redact=True)
        assert store.list_memories()["total"] == 0  # nothing written


def test_a_server_answers_recall_while_it_embeds_a_batch(tmp_path):
    """POST /memory/batch (up to 500 texts through the model) no longer holds every recall back."""
    import httpx
    import uvicorn

    from localmem.http.app import create_app
    from tests.serving import in_thread

    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly")
        app = create_app(store, token="t0ken-for-this-test")
        headers = {"Authorization": "Bearer t0ken-for-this-test"}
        with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
            posted: dict = {}
            batch = {"memories": [{"content": "SLOW: the orchid runbook"}, {"content": "orchid uses postgres"}]}
            writer = threading.Thread(target=lambda: posted.update(
                r=httpx.post(f"{url}/memory/batch", json=batch, headers=headers, timeout=60)))
            writer.start()
            try:
                assert embedder.entered.wait(30)
                answer = httpx.get(f"{url}/recall", params={"query": "orchid deploys"}, headers=headers, timeout=15)
                assert answer.status_code == 200 and answer.json()["results"]
                assert "r" not in posted  # the batch is still in the model: the recall did not wait for it
            finally:
                embedder.gate.set()
                writer.join(30)
            assert posted["r"].status_code == 201 and posted["r"].json()["stored"] == 2


def test_a_recall_is_answered_while_a_single_store_is_being_embedded(tmp_path):
    """store() and store_checked() run the model before they take the lock, as prepare_many does."""
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly")
        stored: dict = {}
        writer = threading.Thread(target=lambda: stored.update(
            id=store.store("SLOW: orchid moved to postgres 17", tags=["project:orchid"])))
        writer.start()
        try:
            assert embedder.entered.wait(30)
            answered: dict = {}
            reader = threading.Thread(target=lambda: answered.update(r=store.recall("orchid deploys", limit=3)))
            reader.start()
            reader.join(20)
            assert not reader.is_alive() and answered["r"]["results"], "recall waited for the model"
            assert "id" not in stored  # the write is still in the model
        finally:
            embedder.gate.set()
            writer.join(30)
        memory = store.get(stored["id"])
        assert memory["content"] == "SLOW: orchid moved to postgres 17" and memory["tags"] == ["project:orchid"]
        found = store.recall("orchid postgres", limit=5)["results"]
        assert stored["id"] in [r["memory"]["id"] for r in found]
        # The checked form dedups against it as before.
        again = store.store_checked("SLOW: orchid moved to postgres 17", tags=["project:orchid"])
        assert again["deduped"] and again["id"] == stored["id"]


def test_a_server_answers_recall_while_it_embeds_one_memory(tmp_path):
    """POST /memory: the route's one embedding no longer holds every recall back."""
    import httpx
    import uvicorn

    from localmem.http.app import create_app
    from tests.serving import in_thread

    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly")
        app = create_app(store, token="t0ken-for-this-test")
        headers = {"Authorization": "Bearer t0ken-for-this-test"}
        with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
            posted: dict = {}
            writer = threading.Thread(target=lambda: posted.update(r=httpx.post(
                f"{url}/memory", json={"content": "SLOW: the orchid runbook"}, headers=headers, timeout=60)))
            writer.start()
            try:
                assert embedder.entered.wait(30)
                answer = httpx.get(f"{url}/recall", params={"query": "orchid deploys"}, headers=headers, timeout=15)
                assert answer.status_code == 200 and answer.json()["results"]
                assert "r" not in posted
            finally:
                embedder.gate.set()
                writer.join(30)
            assert posted["r"].status_code == 201
            assert store.get(posted["r"].json()["memory_id"])["content"] == "SLOW: the orchid runbook"


def test_an_update_embeds_without_the_lock_and_keeps_a_change_made_meanwhile(tmp_path):
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        memory_id = store.store("orchid uses mysql", tags=["project:orchid"])
        done: dict = {}
        writer = threading.Thread(
            target=lambda: done.update(r=store.update(memory_id, content="SLOW: orchid uses postgres")))
        writer.start()
        try:
            assert embedder.entered.wait(30)
            answered: dict = {}
            reader = threading.Thread(target=lambda: answered.update(r=store.recall("orchid", limit=3)))
            reader.start()
            reader.join(20)
            assert not reader.is_alive() and answered["r"]["results"], "recall waited for the model"
            store.update(memory_id, importance=0.9)  # another thread's change while the model runs
        finally:
            embedder.gate.set()
            writer.join(30)
        memory = store.get(memory_id)
        assert memory["content"] == "SLOW: orchid uses postgres" and memory["importance"] == 0.9
        assert done["r"]["importance"] == 0.9  # the update merged onto the memory as it was at its write
        found = store.recall("orchid postgres", limit=1)["results"]
        assert found[0]["memory"]["id"] == memory_id


def test_a_supersede_embeds_without_the_lock_and_refuses_an_old_memory_deleted_meanwhile(tmp_path):
    from localmem.errors import NotFoundError

    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        old_id = store.store("orchid uses mysql")
        kept_id = store.store("orchid deploys nightly")
        outcome: dict = {}

        def supersede() -> None:
            try:
                outcome["r"] = store.supersede(old_id, "SLOW: orchid uses postgres")
            except NotFoundError as exc:
                outcome["error"] = exc

        writer = threading.Thread(target=supersede)
        writer.start()
        try:
            assert embedder.entered.wait(30)
            answered: dict = {}
            reader = threading.Thread(target=lambda: answered.update(r=store.recall("orchid", limit=3)))
            reader.start()
            reader.join(20)
            assert not reader.is_alive() and answered["r"]["results"], "recall waited for the model"
            store.delete(old_id)
        finally:
            embedder.gate.set()
            writer.join(30)
        assert "r" not in outcome and old_id in str(outcome["error"])
        assert [m["id"] for m in store.list_memories()["memories"]] == [kept_id]  # nothing half-written
        # Uncontended, the same call supersedes as before.
        again = store.supersede(kept_id, "SLOW: orchid deploys hourly")
        assert again["superseded_memory_id"] == kept_id and store.get(again["memory_id"])["content"].endswith("hourly")
