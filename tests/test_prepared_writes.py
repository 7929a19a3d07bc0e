"""prepare_many: a batch embedded without the store's lock, then written by store_many_checked."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import pytest

from localmem import MemoryStore
from localmem.embedders.hashing import HashEmbedder
from localmem.errors import NotFoundError, ValidationError


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


@contextlib.contextmanager
def held_in_the_model(embedder: GatedEmbedder, write) -> Iterator[dict]:
    """``write()`` run on a thread and held inside its model call; yields ``{"r": answer}`` or ``{"error": exc}``
    (empty while held), and lets the model go on at the end."""
    out: dict = {}

    def run() -> None:
        try:
            out["r"] = write()
        except Exception as exc:  # the test reads it
            out["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert embedder.entered.wait(30)
        yield out
    finally:
        embedder.gate.set()
        worker.join(30)


def assert_recall_answered(store: MemoryStore, query: str) -> None:
    """A recall on another thread is answered now: the store's lock is free while the model runs."""
    answered: dict = {}
    reader = threading.Thread(target=lambda: answered.update(r=store.recall(query, limit=3)))
    reader.start()
    reader.join(20)
    assert not reader.is_alive() and answered["r"]["results"], "recall waited for the model"


def test_a_recall_is_answered_while_a_prepared_batch_is_being_embedded(tmp_path):
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly", tags=["project:orchid"])
        items = [{"content": "SLOW: a long assistant answer about orchid"}, {"content": "orchid uses postgres"}]
        with held_in_the_model(embedder, lambda: store.prepare_many(items)) as prepared:
            assert_recall_answered(store, "orchid deploys")  # the model is mid-batch
        results = store.store_many_checked(prepared["r"], dedup=True)
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


@pytest.mark.parametrize("route, body, stored", [
    ("/memory", {"content": "SLOW: the orchid runbook"}, 1),
    ("/memory/batch", {"memories": [{"content": "SLOW: the orchid runbook"}, {"content": "orchid uses postgres"}]}, 2),
])
def test_a_server_answers_recall_while_it_embeds_a_write(tmp_path, route, body, stored):
    """POST /memory and /memory/batch (up to 500 texts through the model) no longer hold every recall back."""
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
            post = lambda: httpx.post(f"{url}{route}", json=body, headers=headers, timeout=60)  # noqa: E731
            with held_in_the_model(embedder, post) as posted:
                answer = httpx.get(f"{url}/recall", params={"query": "orchid deploys"}, headers=headers, timeout=15)
                assert answer.status_code == 200 and answer.json()["results"]
                assert not posted  # the write is still in the model: the recall did not wait for it
            assert posted["r"].status_code == 201
        assert store.list_memories()["total"] == 1 + stored
        assert "SLOW: the orchid runbook" in [m["content"] for m in store.list_memories()["memories"]]


def test_a_recall_is_answered_while_a_single_store_is_being_embedded(tmp_path):
    """store() and store_checked() run the model before they take the lock, as prepare_many does."""
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        store.store("the orchid service deploys nightly")
        write = lambda: store.store("SLOW: orchid moved to postgres 17", tags=["project:orchid"])  # noqa: E731
        with held_in_the_model(embedder, write) as stored:
            assert_recall_answered(store, "orchid deploys")
            assert not stored  # the write is still in the model
        memory = store.get(stored["r"])
        assert memory["content"] == "SLOW: orchid moved to postgres 17" and memory["tags"] == ["project:orchid"]
        found = store.recall("orchid postgres", limit=5)["results"]
        assert stored["r"] in [r["memory"]["id"] for r in found]
        # The checked form dedups against it as before.
        again = store.store_checked("SLOW: orchid moved to postgres 17", tags=["project:orchid"])
        assert again["deduped"] and again["id"] == stored["r"]


def test_an_update_embeds_without_the_lock_and_keeps_a_change_made_meanwhile(tmp_path):
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        memory_id = store.store("orchid uses mysql", tags=["project:orchid"])
        with held_in_the_model(embedder, lambda: store.update(memory_id, content="SLOW: orchid uses postgres")) as done:
            assert_recall_answered(store, "orchid")
            store.update(memory_id, importance=0.9)  # another thread's change while the model runs
        memory = store.get(memory_id)
        assert memory["content"] == "SLOW: orchid uses postgres" and memory["importance"] == 0.9
        assert done["r"]["importance"] == 0.9  # the update merged onto the memory as it was at its write
        found = store.recall("orchid postgres", limit=1)["results"]
        assert found[0]["memory"]["id"] == memory_id


def test_a_supersede_embeds_without_the_lock_and_refuses_an_old_memory_deleted_meanwhile(tmp_path):
    embedder = GatedEmbedder()
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        old_id = store.store("orchid uses mysql")
        kept_id = store.store("orchid deploys nightly")
        with held_in_the_model(embedder, lambda: store.supersede(old_id, "SLOW: orchid uses postgres")) as outcome:
            assert_recall_answered(store, "orchid")
            store.delete(old_id)
        assert isinstance(outcome.get("error"), NotFoundError) and old_id in str(outcome["error"])
        assert [m["id"] for m in store.list_memories()["memories"]] == [kept_id]  # nothing half-written
        # Uncontended, the same call supersedes as before.
        again = store.supersede(kept_id, "SLOW: orchid deploys hourly")
        assert again["superseded_memory_id"] == kept_id and store.get(again["memory_id"])["content"].endswith("hourly")
