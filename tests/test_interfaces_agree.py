"""One scenario through the Python API, the HTTP API and the MCP server: same memories back."""

from __future__ import annotations

import pytest

from localmem import MemoryStore

pytest.importorskip("starlette")
pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")

from localmem.http.app import create_app  # noqa: E402
from tests.test_http import running  # noqa: E402
from tests.test_mcp import StdioServer  # noqa: E402

MEMORIES = [
    {"content": "Chose PostgreSQL over MongoDB for the primary database.",
     "tags": ["project:alpha", "database"], "importance": 0.9, "timestamp": "2025-01-15T10:30:00Z"},
    {"content": "Nightly invoice export timed out on a sequential scan.",
     "tags": ["project:alpha", "bug"], "importance": 0.6, "timestamp": "2025-02-01T09:00:00Z"},
    {"content": "Team lunch is on Fridays.", "tags": ["social"], "importance": 0.2,
     "timestamp": "2025-02-03T12:00:00Z"},
]
SUPERSEDED = {"content": "We keep the database on MongoDB for now.", "tags": ["project:alpha", "database"],
              "importance": 0.5, "timestamp": "2024-12-01T10:00:00Z"}
QUERIES = [
    {"query": "database decision", "limit": 5},
    {"query": "invoice export", "tags": ["project:alpha"], "limit": 5},
    {"tags": ["project"], "limit": 10},
]


def contents(results):
    """Content in order; the MCP tool flattens each result (AutoMem's client shape)."""
    return [(r["memory"] if "memory" in r else r)["content"] for r in results]


def python_api() -> list[list[str]]:
    with MemoryStore(":memory:", embedder="hash") as store:
        old = store.store(**SUPERSEDED)
        for item in MEMORIES:
            store.store(**item)
        store.supersede(old, MEMORIES[0]["content"] + " ", tags=MEMORIES[0]["tags"])
        return [contents(store.recall(**q)["results"]) for q in QUERIES]


def http_api() -> list[list[str]]:
    store = MemoryStore(":memory:", embedder="hash")
    try:
        with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=30) as client:
            old = client.post("/memory", json=SUPERSEDED).json()["memory_id"]
            for item in MEMORIES:
                assert client.post("/memory", json=item).status_code == 201
            store.supersede(old, MEMORIES[0]["content"] + " ", tags=MEMORIES[0]["tags"])
            out = []
            for q in QUERIES:
                response = client.get("/recall", params=q)
                assert response.status_code == 200, response.text
                out.append(contents(response.json()["results"]))
            return out
    finally:
        store.close()


def mcp_server(tmp_path) -> list[list[str]]:
    server = StdioServer(tmp_path / "mcp.db")
    try:
        def call(name, args):
            result = server.call(name, args)
            assert not result.is_error, result.content
            return result.structured_content

        old = call("store_memory", SUPERSEDED)["memory_id"]
        call("store_memory", {"memories": MEMORIES})
        call("store_memory", {"content": MEMORIES[0]["content"] + " ", "tags": MEMORIES[0]["tags"],
                              "supersedes_memory_id": old})
        return [contents(call("recall_memory", {**q, "format": "json"})["results"]) for q in QUERIES]
    finally:
        server.close()


def test_same_memories_through_every_interface(tmp_path):
    expected = python_api()
    assert expected[0] and expected[1] and expected[2]
    assert SUPERSEDED["content"] not in sum(expected, [])  # current-state filtering everywhere
    assert http_api() == expected
    assert mcp_server(tmp_path) == expected
