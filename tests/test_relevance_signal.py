"""A relevance signal in plain recall: ``confidence`` in the GET /recall body (the v1 route's
calibrated bands on recall's own cosine evidence), shown by the CLI and in MCP text.

Recall fills its limit whatever the query, so without this a query about nothing stored looks
like any other answer. With the hash embedder an unrelated query has cosines near 0 and the
exact text of a memory has cosine 1, the two ends of the bands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.cli import main
from tests.serving import in_thread

FACTS = [
    "We decided to use PostgreSQL for the billing service",
    "Alice prefers dark mode in every editor",
    "The deploy checklist: run migrations, warm caches, flip the flag",
    "Standup moved to 9:30 on Mondays",
    "The staging cluster runs on three small nodes",
    "Bob reviews every database migration before it ships",
]
# The cosine fields of old, extended with the calibrated relevance summary (test_relevance_calibrated.py).
KEYS = {"level", "top_score", "prominence", "relative_margin", "result_count", "rationale", "basis",
        "relevance", "relevant", "relevance_floor", "relevant_count"}


def fill(store: MemoryStore) -> None:
    for fact in FACTS:
        store.store(fact)


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as s:
        fill(s)
        yield s


def test_recall_body_says_when_nothing_relevant_is_stored(store: MemoryStore) -> None:
    unrelated = store.recall("x")
    assert unrelated["count"] >= 3  # the limit is still filled...
    confidence = unrelated["confidence"]
    assert set(confidence) == KEYS
    assert confidence["level"] == "none" and confidence["basis"] == "semantic"  # ...but it says so
    assert confidence["top_score"] < 0.25 and confidence["result_count"] == unrelated["count"]
    exact = store.recall(FACTS[0])
    assert exact["confidence"]["level"] == "high" and exact["confidence"]["top_score"] == pytest.approx(1.0)
    assert "confidence" not in store.recall()  # no query: nothing to judge


def test_superseded_memories_do_not_vouch_for_the_answer(store: MemoryStore) -> None:
    old = store.recall(FACTS[1])["results"][0]["id"]
    store.supersede(old, "Alice switched to a light theme this spring")
    body = store.recall(FACTS[1])
    assert old not in {r["id"] for r in body["results"]}
    assert body["confidence"]["top_score"] < 0.99  # the hidden exact match is not the evidence
    history = store.recall(FACTS[1], state_mode="history")
    assert history["confidence"]["top_score"] == pytest.approx(1.0)


def test_without_a_vector_channel_the_keyword_evidence_stands_in() -> None:
    with MemoryStore(":memory:", embedder="none") as store:
        fill(store)
        body = store.recall("PostgreSQL billing")
    assert body["degraded"] is True
    assert body["confidence"]["basis"] == "keyword" and body["confidence"]["prominence"] is None


def test_cli_shows_the_match_confidence(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as s:
        fill(s)
    capsys.readouterr()
    assert main(["--db", str(db), "recall", "x"]) == 0
    out = capsys.readouterr().out
    assert "match confidence: none (relevance 0." in out and "best cosine 0." in out and "nothing stored looks relevant" in out
    assert main(["--db", str(db), "recall", FACTS[0]]) == 0
    assert "; best cosine 1.00): a close match is stored" in capsys.readouterr().out


def test_mcp_recall_text_carries_it() -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from localmem.mcp_server import build_server

    with MemoryStore(":memory:", embedder="hash") as store:
        fill(store)
        server = build_server(lambda: store, warm_up=False)

        async def scenario() -> tuple[Any, Any]:
            async with Client(server) as client:
                return (await client.call_tool("recall_memory", {"query": "x"}),
                        await client.call_tool("recall_memory", {"query": FACTS[0]}))

        unrelated, exact = anyio.run(scenario)
    assert "match confidence none (relevance 0." in unrelated.content[0].text
    assert "likely nothing relevant is stored" in unrelated.content[0].text
    assert unrelated.structured_content["confidence"]["level"] == "none"
    assert "; best cosine 1.00)" in exact.content[0].text


@contextmanager
def serving(store: MemoryStore) -> Iterator[str]:
    uvicorn = pytest.importorskip("uvicorn")
    from localmem.http.app import create_app

    app = create_app(store, token="")
    with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
        yield url


def test_http_recall_body_carries_it(store: MemoryStore) -> None:
    httpx = pytest.importorskip("httpx")
    with serving(store) as url:
        body = httpx.get(f"{url}/recall", params={"query": "x"}, timeout=10).json()
    assert body["status"] == "success" and body["confidence"]["level"] == "none"
    assert set(body["confidence"]) == KEYS
