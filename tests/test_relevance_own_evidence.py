"""A memory's ``relevance`` rests on its own evidence only: it does not fall because a
competitor was superseded, nor because the scope is small or large (issue 40).

The case from the issue: two decisions, the second superseding the first; recall showed the
current decision first but judged it on no evidence at all (it was put in the superseded
one's place without a cosine of its own), so the prompt hook injected a traceback instead.
With the hash embedder the property holds structurally (every input is a function of the
query and the memory); the real-model case is marked ``model``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore

QUERY = "which database does the orders service use?"
OLD = "Decision: the orders service uses MySQL for its database"
NEW = "Decision: the orders service uses PostgreSQL for its database, replacing MySQL"
NOISE = [
    "Traceback (most recent call last): File app.py, line 3, in main: raise KeyError('orders')",
    "def handler(event):\n    return process(event['orders'])",
    "The deploy checklist: run migrations, warm caches, flip the flag",
    "Alice prefers dark mode in every editor",
]


def cli(db: Path, *args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "--json", *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def relevance_by_content(store: MemoryStore, query: str, **params: Any) -> dict[str, dict[str, Any]]:
    """Per route, each current result's content -> (relevance, confidence block)."""
    recall = store.recall(query, **params)
    v1 = store.recall_v1(query)
    return {
        "recall": {"top": recall["results"][0]["memory"]["content"], "confidence": recall["confidence"],
                   "relevance": {r["memory"]["content"]: r["relevance"] for r in recall["results"]}},
        "recall_v1": {"top": store.get(v1["results"][0]["memory_id"])["content"], "confidence": v1["confidence"],
                      "relevance": {store.get(r["memory_id"])["content"]: r["relevance"]
                                    for r in v1["results"] if not r["folded"]}},
    }


def test_superseding_the_old_decision_keeps_the_new_one_relevant(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        for text in NOISE:
            store.store(text)
        old_id = store.store(OLD)
        store.store(NEW)
        before = relevance_by_content(store, QUERY)
    cli(db, "supersede", old_id, "--id", _id_of(db, NEW))  # the user's way: the CLI
    with MemoryStore(db, embedder="hash") as store:
        after = relevance_by_content(store, QUERY)
    for route in ("recall", "recall_v1"):
        assert after[route]["top"] == NEW, route
        assert OLD not in after[route]["relevance"], route
        # Its own evidence, unchanged: the superseded twin does not count against it. Its place in the
        # answer (reciprocal_rank) can only improve once the twin is gone, so its relevance never falls.
        assert after[route]["relevance"][NEW] >= before[route]["relevance"][NEW], route
        confidence = after[route]["confidence"]
        assert confidence["relevant"] is True and confidence["relevance"] == after[route]["relevance"][NEW]
        assert confidence["relevant_count"] == 1, (route, after[route]["relevance"])  # not the traceback
        assert confidence["level"] != "none"


def _id_of(db: Path, content: str) -> str:
    with MemoryStore(db, embedder="hash") as store:
        return next(r["id"] for r in store.recall(content, limit=10)["results"] if r["memory"]["content"] == content)


def test_a_head_the_search_did_not_find_is_judged_on_its_own_evidence() -> None:
    # recall_v1 with k=1 over many near copies of the old decision finds it but not its
    # successor, which the chain walk brings in: the successor gets its own cosine and words,
    # as in a store of its own (its cosine stands in for token evidence, as for a memory
    # without token codes), never the "no evidence" a missing cosine used to read as.
    successor = "We moved the orders database to PostgreSQL last spring"
    with MemoryStore(":memory:", embedder="hash") as alone:
        alone.store(successor)
        own = alone.recall_v1(OLD, k=1)["results"][0]["score_components"]["relevance_inputs"]
    with MemoryStore(":memory:", embedder="hash") as store:
        old_id = store.store(OLD)
        for n in range(120):
            store.store(f"{OLD} (note {n})")
        store.supersede(old_id, successor)
        body = store.recall_v1(OLD, k=1)
        head = next(r for r in body["results"] if not r["folded"])
        assert store.get(head["memory_id"])["content"] == successor
        inputs = head["score_components"]["relevance_inputs"]
        assert inputs["cosine"] == pytest.approx(own["cosine"], abs=1e-6) and inputs["cosine"] > 0.1
        assert inputs["coverage"] == own["coverage"] > 0
        assert inputs["token"] == pytest.approx(max(0.0, own["cosine"]), abs=1e-6)
        assert inputs["keyword"] > 0  # its own words, scored by BM25 as the search scores them


@pytest.mark.parametrize("others", [0, 1, 60])
def test_relevance_does_not_depend_on_what_else_is_in_scope(others: int) -> None:
    """The same memory and query read the same relevance in a scope of one and of sixty."""
    with MemoryStore(":memory:", embedder="hash") as alone:
        alone.store(NEW, tags=["project:orders"])
        expected = relevance_by_content(alone, QUERY)
    with MemoryStore(":memory:", embedder="hash") as store:
        store.store(NEW, tags=["project:orders"])
        for n in range(others):
            store.store(f"{NOISE[n % len(NOISE)]} (copy {n})", tags=["project:orders" if n % 2 else "project:web"])
        found = relevance_by_content(store, QUERY)
        scoped = store.recall(QUERY, tags=["project:orders"])
    for route in ("recall", "recall_v1"):
        assert found[route]["relevance"][NEW] == expected[route]["relevance"][NEW], route
    assert {r["memory"]["content"]: r["relevance"] for r in scoped["results"]}[NEW] == \
        expected["recall"]["relevance"][NEW]


@pytest.mark.model
@pytest.mark.xfail(strict=True, reason="recall's calibrated floor rose to 0.92 with the refit on all 80 LongMemEval "
                   "dev instances and the reciprocal_rank input (docs/relevance.md, 2026-12-05), 0.91 refitted on "
                   "lme13's trees (2026-12-06, relfit13): the current decision leads the answer and reads 0.885 on "
                   "both routes, so recall calls it 'low'; the prompt hook (floor 0.90) still injects the current "
                   "decision (tests/test_hook_inject_cases.py)")
def test_real_model_superseded_decision_case(memory_store_factory) -> None:
    store = memory_store_factory(embedder="auto")
    if not store.health()["embedder"]["available"]:
        pytest.skip(f"MiniLM is not available: {store.embedder_error}")
    for text in NOISE:
        store.store(text)
    old_id = store.store("We decided the orders service uses MySQL as its database")
    new_id = store.store("Decision: the orders service moves to PostgreSQL; MySQL is retired")
    before = relevance_by_content(store, QUERY)
    store.supersede(old_id, new_id)
    after = relevance_by_content(store, QUERY)
    new = store.get(new_id)["content"]
    for route in ("recall", "recall_v1"):
        assert after[route]["top"] == new, route
        # Never lower once the old one is superseded (its place can only improve: reciprocal_rank).
        assert after[route]["relevance"][new] >= before[route]["relevance"][new] - 1e-4, route
        confidence = after[route]["confidence"]
        assert confidence["relevant"] is True and confidence["level"] != "none", (route, confidence)
        floor = confidence["relevance_floor"]
        # Only the decision clears the floor: not the traceback, not the code.
        assert [c for c, v in after[route]["relevance"].items() if v >= floor] == [new], (route, after[route])
