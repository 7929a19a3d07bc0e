"""Deleting by tag never widens what the caller named: a tag string that would be read as several
tags (split on a space or a semicolon, a '#' dropped) is refused before anything is deleted, on
HTTP's ``DELETE /memory/by-tag`` and the MCP tool ``delete_memory``. Reading "project alpha" as
``project`` and ``alpha`` is a fine guess for a filter and a store, not for a delete: it deleted
every memory tagged ``project`` and every one tagged ``alpha``, and said so afterwards."""

from __future__ import annotations

import pytest

from localmem import MemoryStore

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from localmem.http.app import create_app
from tests.test_http import running


def seeded() -> MemoryStore:
    store = MemoryStore(":memory:", embedder="hash")
    store.store("the project plan", tags=["project"])
    store.store("the alpha release", tags=["alpha"])
    store.store("the project alpha kickoff", tags=["project-alpha"])
    return store


@pytest.mark.parametrize("given", ["project alpha", "project;alpha", "#project-alpha"])
def test_http_refuses_a_tag_it_would_have_to_read_as_others(given):
    with seeded() as store, running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        response = client.delete("/memory/by-tag", params={"tags": given})
        assert response.status_code == 400, response.text
        assert "'tags'" in response.json()["message"] and "nothing was deleted" in response.json()["message"]
        assert store.health()["memory_count"] == 3
        done = client.delete("/memory/by-tag", params=[("tags", "project"), ("tags", "alpha")]).json()
        assert done["deleted_count"] == 2 and store.health()["memory_count"] == 1


def test_mcp_delete_memory_refuses_it_too():
    pytest.importorskip("mcp")
    from localmem.mcp_server.handlers import call_tool

    with seeded() as store:
        out = call_tool(lambda: store, "delete_memory", {"tags": ["project alpha"]})
        assert out.is_error and "'tags'" in out.texts[0] and "nothing was deleted" in out.texts[0]
        assert store.health()["memory_count"] == 3
        out = call_tool(lambda: store, "delete_memory", {"tags": ["project-alpha"]})
        assert not out.is_error and store.health()["memory_count"] == 2
