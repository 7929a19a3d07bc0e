"""A field *name* holding a lone surrogate is a 4xx naming it, never a 500 (issue 12, item 7).

Found by ``benchmarks/safety/hostile_input.py`` (fresh seeds): ``POST /api/v1/memory/recall``
with the body ``{"\\ud800": null}`` answered 500, because the 422 quoted the unknown
field's name as it came, and a lone surrogate cannot be written as UTF-8 JSON.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

from localmem import MemoryStore  # noqa: E402
from localmem.http.app import create_app  # noqa: E402

JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture
def client():
    with MemoryStore(":memory:", embedder="hash") as store:
        store.store("a memory about apples")
        with TestClient(create_app(store), base_url="http://localhost", raise_server_exceptions=False) as c:
            yield c, store


@pytest.mark.parametrize("body, where", [
    (b'{"\\ud800": null}', "\\ud800"),
    (b'{"query": "apples", "\\udfff": 1}', "\\udfff"),
    (b'{"query": "apples", "\\udc00\\ud800": true}', "\\udc00\\ud800"),
    (b'{"query": "apples", "filters": {"\\ud800": 1}}', "filters.\\ud800"),
])
def test_recall_v1_names_an_unknown_field_with_a_lone_surrogate(client, body, where):
    c, store = client
    response = c.post("/api/v1/memory/recall", content=body, headers=JSON_TYPE)
    assert response.status_code == 422, response.text[:300]
    reply = response.json()
    assert reply["message"].startswith(f"{where}: ")
    json.dumps(reply, allow_nan=False).encode("utf-8")  # strict JSON, valid UTF-8
    assert store.health()["memory_count"] == 1


@pytest.mark.parametrize("path", ["/memory", "/associate"])
def test_other_routes_name_it_too(client, path):
    c, store = client
    response = c.post(path, content=b'{"content": "x", "\\ud800": 1}', headers=JSON_TYPE)
    assert response.status_code == 400, response.text[:300]
    assert "\\ud800" in response.json()["message"]
    assert store.health()["memory_count"] == 1
