"""Bodies with fields a route does not know are refused, naming the field (AutoMem drops them).

Against a real uvicorn server on 127.0.0.1; the store is unchanged by every refusal.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

from localmem import MemoryStore
from localmem.http.app import create_app
from tests.test_http import running


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as opened:
        yield opened


@pytest.fixture(scope="module")
def client(store: MemoryStore) -> Iterator[httpx.Client]:
    with running(create_app(store)) as base_url, httpx.Client(base_url=base_url, timeout=10) as http:
        yield http


def refused(response: httpx.Response, code: int, *fragments: str) -> str:
    assert response.status_code == code, response.text
    message = response.json().get("message") or str(response.json().get("detail"))
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_patch_with_an_unknown_field_changes_nothing(client, store):
    memory_id = client.post("/memory", json={"content": "The deploy runs at noon."}).json()["memory_id"]
    before = store.get(memory_id)
    message = refused(client.patch(f"/memory/{memory_id}", json={"bogus_field": 1, "importance": 0.9}),
                      400, "unknown field 'bogus_field'", "allowed:", "importance")
    assert "content" in message
    assert store.get(memory_id) == before  # the known field was not applied either


def test_post_with_a_misspelt_field_stores_nothing(client, store):
    count = store.health()["memory_count"]
    refused(client.post("/memory", json={"content": "Tabs over spaces.", "improtance": 0.9}),
            400, "unknown field 'improtance'")
    refused(client.post("/memory/batch", json={"memories": [{"content": "a"}, {"content": "b", "tgas": ["x"]}]}),
            400, "Memory at index 1: unknown field 'tgas'")
    assert store.health()["memory_count"] == count


def test_associate_with_an_unknown_field_is_refused(client, store):
    first = client.post("/memory", json={"content": "first"}).json()["memory_id"]
    second = client.post("/memory", json={"content": "second"}).json()["memory_id"]
    refused(client.post("/associate", json={"memory1_id": first, "memory2_id": second, "type": "RELATES_TO",
                                            "strength": 0.5, "strenght": 0.9}), 400, "unknown field 'strenght'")
    batch = client.post("/associate", json={"associations": [
        {"memory1_id": first, "memory2_id": second, "type": "RELATES_TO", "strength": 0.5, "wieght": 1}]})
    assert batch.json()["failed"][0]["reason"].startswith("Association at index 0: unknown field 'wieght'")
    assert store.related(first)["count"] == 0


def test_automem_client_fields_are_all_known(client):
    """What AutoMem's own MCP client sends to POST /memory and PATCH /memory/{id}."""
    stored = client.post("/memory", json={
        "content": "We chose SQLite.", "type": "Decision", "confidence": 0.9, "tags": ["db"],
        "importance": 0.8, "metadata": {"source": "test"}, "timestamp": "2026-11-01T10:00:00Z",
        "t_valid": "2026-11-01T10:00:00Z", "updated_at": "2026-11-01T10:00:00Z",
        "last_accessed": "2026-11-01T10:00:00Z"})
    assert stored.status_code == 201, stored.text
    memory_id = stored.json()["memory_id"]
    patched = client.patch(f"/memory/{memory_id}", json={
        "content": "We chose SQLite in WAL mode.", "tags": ["db"], "importance": 0.7, "metadata": {},
        "timestamp": "2026-11-01T10:00:00Z", "updated_at": "2026-11-02T10:00:00Z", "type": "Decision",
        "confidence": 0.8, "t_invalid": "2026-12-01T00:00:00Z", "last_accessed": "2026-11-02T10:00:00Z"})
    assert patched.status_code == 200, patched.text


def test_recall_v1_with_an_unknown_field_is_a_422(client):
    response = client.post("/api/v1/memory/recall", json={"query": "sqlite", "kk": 3})
    assert response.status_code == 422, response.text
    [problem] = response.json()["detail"]
    assert problem["loc"] == ["body", "kk"] and problem["type"] == "extra_forbidden"


def test_a_query_parameter_a_route_does_not_know_is_said(client, store):
    """A misspelt filter (``tag`` for ``tags``) would search everything; the answer says it was
    ignored (a warning, not a 400: AutoMem ignores them, and its MCP client sends ``format``)."""
    client.post("/memory", json={"content": "query parameter probe", "tags": ["probe"]})
    body = client.get("/recall?query=probe&tag=probe&limt=2").json()
    assert body["status"] == "success"
    [note] = [w for w in body["warnings"] if "ignored" in w]
    assert "'tag'" in note and "'limt'" in note
    assert "warnings" not in client.get("/recall?query=probe&tags=probe&format=text&offset=0").json()
    assert any("'offset'" in w for w in client.get("/recall?query=probe&offset=20").json()["warnings"])
    assert any("'tag'" in w for w in client.get("/memory/by-tag?tags=probe&tag=x").json()["warnings"])
    memory_id = store.by_tag(["probe"])["memories"][0]["id"]
    related = client.get(f"/memories/{memory_id}/related?depth=3").json()
    assert any("'depth'" in w for w in related["warnings"])


def test_a_body_with_a_field_given_twice_is_refused_naming_it(client, store):
    """JSON allows a key twice in one object, and parsers keep the last: a proxy or a client that
    reads the first would see another memory than the one stored."""
    before = store.health()["memory_count"]
    raw = b'{"content": "the harmless one", "tags": ["x"], "content": "the other one"}'
    response = client.post("/memory", content=raw, headers={"Content-Type": "application/json"})
    refused(response, 400, "'content'", "twice")
    nested = b'{"content": "ok", "metadata": {"a": 1, "a": 2}}'
    response = client.post("/memory", content=nested, headers={"Content-Type": "application/json"})
    refused(response, 400, "'a'", "twice")
    assert store.health()["memory_count"] == before


def test_a_patch_that_changes_nothing_says_so(client, store):
    """The CLI and the MCP tool refuse an update with nothing in it; PATCH keeps AutoMem's 200
    but says that nothing changed, and that null leaves a field as it is (t_invalid: null clears)."""
    memory_id = client.post("/memory", json={"content": "patch probe"}).json()["memory_id"]
    empty = client.patch(f"/memory/{memory_id}", json={})
    assert empty.status_code == 200 and any("nothing to update" in w for w in empty.json()["warnings"])
    nulls = client.patch(f"/memory/{memory_id}", json={"content": None, "tags": None}).json()
    assert any("'content'" in w and "'tags'" in w and "null" in w for w in nulls["warnings"]), nulls
    assert store.get(memory_id)["content"] == "patch probe"
    cleared = client.patch(f"/memory/{memory_id}", json={"t_invalid": None, "importance": 0.7}).json()
    assert "warnings" not in cleared and cleared["memory"]["importance"] == 0.7


def test_a_batch_body_with_an_unknown_top_level_field_is_refused(client, store):
    """Each item's fields were checked, the batch's own were not: a memory's field put beside
    ``memories`` (``"tags"`` meant for all of them) was dropped without a word."""
    before = store.health()["memory_count"]
    refused(client.post("/memory/batch", json={"memories": [{"content": "batch probe"}], "tags": ["all"]}),
            400, "unknown field 'tags'", "memories")
    first = client.post("/memory", json={"content": "edge probe one"}).json()["memory_id"]
    second = client.post("/memory", json={"content": "edge probe two"}).json()["memory_id"]
    refused(client.post("/associate", json={"associations": [
        {"memory1_id": first, "memory2_id": second, "type": "RELATES_TO", "strength": 0.5}], "strength": 0.9}),
        400, "unknown field 'strength'", "associations")
    assert store.health()["memory_count"] == before + 2 and store.related(first)["count"] == 0
    stored = client.post("/memory/batch", json={"memories": [{"content": "batch probe"}], "dedup": False,
                                                 "redact": False})
    assert stored.status_code == 201, stored.text


def test_a_delete_with_a_query_parameter_it_does_not_know_deletes_nothing(client, store):
    """On a route that deletes, a parameter that is not obeyed is refused before anything goes:
    ``limit=1`` did not stop ``DELETE /memory/by-tag`` from deleting every memory with the tag, and
    ``dry_run=true`` did not stop ``DELETE /memory/{id}``."""
    ids = [client.post("/memory", json={"content": f"doomed {i}", "tags": ["doomed"]}).json()["memory_id"]
           for i in range(3)]
    for query in ("limit=1", "prefix=true", "tags=doomed&offset=2"):
        refused(client.delete(f"/memory/by-tag?tags=doomed&{query}"), 400, "query parameter",
                f"'{query.split('=')[0].split('&')[-1]}'" if "&" not in query else "'offset'")
    refused(client.delete(f"/memory/{ids[0]}?dry_run=true"), 400, "'dry_run'")
    assert store.by_tag(["doomed"])["count"] == 3
    assert client.delete("/memory/by-tag?tags=doomed").json()["deleted_count"] == 3
