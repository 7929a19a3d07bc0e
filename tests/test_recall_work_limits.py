"""Issue 33 item 10: one request's work is capped, and the server keeps answering while one works.

100 ``queries`` in one 11 KiB ``GET /recall`` each ran a whole search (15-19 s
with the store held); now more than MAX_RECALL_QUERIES queries, or more than
MAX_RECALL_QUERY_TEXT characters of them, are refused with a 400 (MCP: a tool
error) naming ``queries``, before any search runs.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import httpx
import pytest

from localmem import MemoryStore, ValidationError
from localmem.http.app import create_app
from localmem.http.server import uvicorn_config
from localmem.recall.params import MAX_RECALL_QUERIES, MAX_RECALL_QUERY_TEXT
from tests.serving import in_thread


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    s = MemoryStore(":memory:", embedder="hash")
    s.store_many([{"content": f"memory {i} about apples and pears in the garden"} for i in range(50)])
    yield s
    s.close()


@pytest.fixture(scope="module")
def url(store: MemoryStore) -> Iterator[str]:
    with in_thread(lambda port: uvicorn_config(create_app(store), port=port, log_config=None,
                                               log_level="warning")) as base:
        yield base


def test_too_many_queries_are_refused_naming_the_field(store):
    with pytest.raises(ValidationError, match=f"'queries' accepts at most {MAX_RECALL_QUERIES}"):
        store.recall(queries=[f"apple {i}" for i in range(MAX_RECALL_QUERIES + 1)])
    with pytest.raises(ValidationError, match="'queries'"):  # comma-separated parts count each
        store.recall(queries=",".join(f"pear {i}" for i in range(MAX_RECALL_QUERIES + 1)))
    answer = store.recall(queries=[f"apple {i}" for i in range(MAX_RECALL_QUERIES)], limit=3)
    assert answer["count"] == 3 and len(answer["queries"]) == MAX_RECALL_QUERIES


def test_too_much_query_text_is_refused_naming_the_field(store):
    half = MAX_RECALL_QUERY_TEXT // 2
    with pytest.raises(ValidationError, match=f"'queries' may hold at most {MAX_RECALL_QUERY_TEXT:,}"):
        store.recall(queries=["apple " * (half // 6 + 1), "pear " * (half // 5 + 1)])
    assert store.recall(queries=["apple " * (half // 6 - 1), "pear " * (half // 5 - 1)])["status"] == "success"
    assert store.recall("garden " * 1400)["status"] == "success"  # one long query alone: its own 10,000 limit


def test_http_refuses_the_11_kib_hundred_query_recall_with_a_400(url):
    params = [("queries", f"which apples and pears grew best in the old walled garden this year and question {i:03d} of many") for i in range(100)]
    response = httpx.get(f"{url}/recall", params=params, timeout=30)
    assert 10_000 < len(str(response.request.url)) < 16_384
    assert response.status_code == 400, response.text[:300]
    assert "'queries'" in response.json()["message"]


def test_the_server_answers_while_a_request_waits_for_the_store(store, url):
    # Store calls run in a thread pool, never on the event loop: while one holds the store
    # (here the test holds its lock, as a long recall would), the server still takes and answers
    # requests that do not need it, and the waiting recall is answered once the store is free.
    done: dict[str, Any] = {}

    def slow_recall() -> None:
        done["recall"] = httpx.get(f"{url}/recall", params={"query": "apples"}, timeout=30)

    with store.lock:
        waiting = threading.Thread(target=slow_recall)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # queued behind the held store
        other = httpx.get(f"{url}/no-such-route", timeout=5)
        assert other.status_code == 404 and waiting.is_alive()
    waiting.join(30)
    assert done["recall"].status_code == 200


def test_mcp_refuses_too_many_queries_as_a_tool_error_naming_the_argument(tmp_path):
    import anyio
    from mcp import Client

    from localmem.mcp_server import build_server

    server = build_server(lambda: MemoryStore(tmp_path / "m.db", embedder="hash"), warm_up=False)

    async def scenario() -> None:
        async with Client(server) as client:
            many = await client.call_tool("recall_memory", {"queries": ["x" * 10_000] * 100})
            assert many.is_error and "'queries'" in many.content[0].text
            long_text = await client.call_tool("recall_memory", {"queries": ["y" * 6_000, "z" * 6_000]})
            assert long_text.is_error and "10,000 characters" in long_text.content[0].text
            fine = await client.call_tool("recall_memory", {"queries": ["apples", "pears"]})
            assert not fine.is_error

    anyio.run(scenario)
