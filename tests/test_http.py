"""The HTTP API against a real uvicorn server on 127.0.0.1 (localmem.http).

One token-protected server is started for the module; a few tests start a
second one (no token, CORS, a store whose recall breaks). Requests go through
httpx over TCP, as an AutoMem client's would.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from localmem import ConfigError, MemoryStore
from localmem.http.app import create_app
from localmem.http.security import check_bind, is_loopback
from localmem.http.server import serve
from tests.serving import in_thread

TOKEN = "s3cret-T0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON_TYPE = {"Content-Type": "application/json"}  # for raw bodies (others are refused with 415)
MISSING_ID = "6f1e1b8a-0000-4000-8000-000000000000"
DIMS = 384  # the hash embedder's


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


ACCESS_LOG = _Records()


@contextmanager
def running(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields the base URL."""
    with in_thread(lambda port: uvicorn.Config(app, log_config=None, log_level="info", access_log=True,
                                               lifespan="off")) as url:
        yield url


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    s = MemoryStore(":memory:", embedder="hash")
    yield s
    s.close()


@pytest.fixture(scope="module")
def base_url(store: MemoryStore) -> Iterator[str]:
    access = logging.getLogger("uvicorn.access")
    access.addHandler(ACCESS_LOG)
    try:
        with running(create_app(store, token=TOKEN)) as url:
            yield url
    finally:
        access.removeHandler(ACCESS_LOG)


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers=AUTH, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def anon(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as c:
        yield c


def new_memory(client: httpx.Client, content: str, **fields: Any) -> str:
    response = client.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory_id"]


def assert_error(response: httpx.Response, code: int, *fragments: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "error" and body["code"] == code
    assert isinstance(body["message"], str) and body["message"]
    for fragment in fragments:
        assert fragment.lower() in body["message"].lower(), body["message"]
    assert "Traceback" not in response.text
    return body


# --- auth ------------------------------------------------------------------------


def _protected_requests(client: httpx.Client) -> list[tuple[str, str, dict[str, Any], int]]:
    """(method, url, kwargs, status when authenticated) for every protected route."""
    mid = new_memory(client, "Auth matrix memory about Redis caching", tags=["auth-matrix"])
    other = new_memory(client, "Auth matrix second memory", tags=["auth-matrix"])
    v1_status = 200 if hasattr(MemoryStore, "recall_v1") else 501
    return [
        ("POST", "/memory", {"json": {"content": "auth matrix store", "tags": ["auth-matrix"]}}, 201),
        ("POST", "/memory/batch", {"json": {"memories": [{"content": "auth matrix batch"}]}}, 201),
        ("GET", f"/memory/{mid}", {}, 200),
        ("PATCH", f"/memory/{mid}", {"json": {"importance": 0.7}}, 200),
        ("DELETE", f"/memory/{MISSING_ID}", {}, 404),
        ("GET", "/memory/by-tag?tags=auth-matrix", {}, 200),
        ("DELETE", "/memory/by-tag?tags=no-such-tag-anywhere", {}, 200),
        ("POST", "/associate", {"json": {"memory1_id": mid, "memory2_id": other}}, 201),
        ("GET", "/recall?query=redis", {}, 200),
        ("GET", f"/memories/{mid}/related", {}, 200),
        ("POST", "/api/v1/memory/recall", {"json": {"query": "redis"}}, v1_status),
        ("GET", "/no/such/route", {}, 404),
    ]


CREDENTIALS = {
    "none": ({}, ""),
    "wrong-bearer": ({"Authorization": "Bearer nope"}, ""),
    "wrong-x-api-key": ({"X-API-Key": "nope"}, ""),
    "wrong-query": ({}, "api_key=nope"),
    "not-bearer-scheme": ({"Authorization": f"Basic {TOKEN}"}, ""),
    "bearer": ({"Authorization": f"Bearer {TOKEN}"}, ""),
    "bearer-lowercase": ({"Authorization": f"bearer {TOKEN}"}, ""),
    "x-api-key": ({"X-API-Key": TOKEN}, ""),
    "query": ({}, f"api_key={TOKEN}"),
}


@pytest.mark.parametrize("mode", list(CREDENTIALS))
def test_auth_matrix_on_every_protected_route(client, anon, mode):
    headers, query = CREDENTIALS[mode]
    ok = mode in ("bearer", "bearer-lowercase", "x-api-key", "query")
    for method, url, kwargs, status in _protected_requests(client):
        if query:
            url += ("&" if "?" in url else "?") + query
        response = anon.request(method, url, headers=headers, **kwargs)
        if ok:
            assert response.status_code == status, (method, url, response.text)
        else:
            body = assert_error(response, 401, "Unauthorized")
            assert TOKEN not in response.text and "nope" not in json.dumps(body)
    # /health never needs the token.
    assert anon.get("/health", headers=headers).status_code == 200


def test_health_is_open_and_automem_shaped(client, anon, store):
    # Without the token: liveness only (tests/test_http_hardening.py has every caller kind).
    assert set(anon.get("/health").json()) == {"status", "service", "version", "timestamp"}
    body = client.get("/health").json()
    assert body["status"] in ("healthy", "degraded")
    for key in ("memory_count", "vector_count", "sync_status", "vector_dimensions", "enrichment",
                "timestamp", "storage", "fts_count", "edge_count", "indexes_agree",
                "embedder", "schema_version"):
        assert key in body, key
    assert body["status"] == "healthy" and body["sync_status"] == "synced"
    assert body["vector_dimensions"]["configured"] == DIMS
    assert body["path"] == store.path


def test_options_is_exempt_and_no_cors_headers_by_default(anon):
    response = anon.options("/recall", headers={"Origin": "http://evil.test",
                                                "Access-Control-Request-Method": "GET"})
    assert response.status_code != 401
    assert "access-control-allow-origin" not in response.headers
    response = anon.get("/health", headers={"Origin": "http://evil.test"})
    assert "access-control-allow-origin" not in response.headers


def test_cors_when_origins_are_given():
    with MemoryStore(":memory:", embedder="hash") as s, \
            running(create_app(s, token=TOKEN, cors_origins=["http://app.test"])) as url:
        preflight = httpx.options(f"{url}/recall", headers={
            "Origin": "http://app.test", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "Authorization"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://app.test"
        denied = httpx.get(f"{url}/recall", headers={"Origin": "http://app.test"})
        assert denied.status_code == 401
        assert denied.headers["access-control-allow-origin"] == "http://app.test"
        other = httpx.get(f"{url}/health", headers={"Origin": "http://other.test"})
        assert "access-control-allow-origin" not in other.headers


def test_token_from_environment(monkeypatch):
    monkeypatch.delenv("LOCALMEM_API_TOKEN", raising=False)
    monkeypatch.setenv("AUTOMEM_API_TOKEN", "env-token")
    with MemoryStore(":memory:", embedder="hash") as s, running(create_app(s)) as url:
        assert httpx.get(f"{url}/recall").status_code == 401
        assert httpx.get(f"{url}/recall", headers={"X-API-Key": "env-token"}).status_code == 200
        monkeypatch.setenv("LOCALMEM_API_TOKEN", "preferred")  # read at create_app time only
        assert httpx.get(f"{url}/recall", headers={"X-API-Key": "env-token"}).status_code == 200


def test_encoded_query_key_and_non_ascii_token(monkeypatch):
    token = "clé-sécrète"
    with MemoryStore(":memory:", embedder="hash") as s, running(create_app(s, token=token)) as url:
        assert httpx.get(f"{url}/recall", params={"api_key": token}).status_code == 200
        assert httpx.get(f"{url}/recall?api%5Fkey=cl%C3%A9-s%C3%A9cr%C3%A8te").status_code == 200
        assert httpx.get(f"{url}/recall", headers={"X-API-Key": token.encode()}).status_code == 200
        assert httpx.get(f"{url}/recall", params={"api_key": "cle-secrete"}).status_code == 401


def test_without_vector_channel_health_is_degraded_and_recall_still_works(monkeypatch):
    monkeypatch.delenv("LOCALMEM_API_TOKEN", raising=False)
    monkeypatch.delenv("AUTOMEM_API_TOKEN", raising=False)
    with MemoryStore(":memory:", embedder="none") as s, running(create_app(s)) as url, \
            httpx.Client(base_url=url) as c:
        stored = c.post("/memory", json={"content": "Vectorless memory about gardening"}).json()
        assert stored["embedding_status"] == "skipped" and stored["vector_index"] == "unconfigured"
        assert_error(c.post("/memory", json={"content": "x", "embedding": [0.1] * DIMS}), 400,
                     "vector index")
        health = c.get("/health").json()
        assert health["status"] == "degraded" and health["storage"]["vector_index"] == "unconfigured"
        assert health["memory_count"] == 1 and health["vector_count"] == 0
        assert "path" in health  # no token configured: every caller is trusted
        recall = c.get("/recall?query=gardening").json()
        assert [r["id"] for r in recall["results"]] == [stored["memory_id"]]
        assert recall["vector_search"]["enabled"] is False and recall["degraded"] is True


def test_token_never_reaches_the_access_log_or_recall(client, anon):
    ACCESS_LOG.lines.clear()
    response = anon.get(f"/recall?query=redis&api_key={TOKEN}&limit=2")
    assert response.status_code == 200  # api_key is not passed on as a recall parameter
    assert response.json()["count"] <= 2
    deadline = time.monotonic() + 2
    while not any("/recall" in line for line in ACCESS_LOG.lines) and time.monotonic() < deadline:
        time.sleep(0.01)
    logged = [line for line in ACCESS_LOG.lines if "/recall" in line]
    assert logged and all(TOKEN not in line and "api_key" not in line for line in logged)
    assert "limit=2" in logged[0]


# --- POST /memory ------------------------------------------------------------------


def test_store_memory_returns_automem_fields(client):
    response = client.post("/memory", json={
        "content": "  We decided to use PostgreSQL for billing  ", "tags": "billing,db",
        "importance": 0.8, "metadata": {"project": "ledger"},
    })
    assert response.status_code == 201
    body = response.json()
    for key in ("status", "memory_id", "stored_at", "type", "confidence", "vector_index",
                "embedding_status", "enrichment", "metadata", "timestamp", "updated_at",
                "last_accessed", "query_time_ms"):
        assert key in body, key
    assert body["status"] == "success" and body["type"] == "Decision"
    assert body["embedding_status"] == "generated" and body["vector_index"] == "stored"
    assert body["metadata"] == {"project": "ledger"}
    memory = client.get(f"/memory/{body['memory_id']}").json()["memory"]
    assert memory["content"] == "We decided to use PostgreSQL for billing"
    assert memory["tags"] == ["billing", "db"]  # a string of tags splits on commas, as every tag input
    assert memory["importance"] == 0.8


def test_store_memory_with_embedding_type_and_id(client):
    wanted = str(uuid.uuid4())
    body = client.post("/memory", json={
        "content": "explicit vector", "embedding": [0.1] * DIMS, "type": "Insight",
        "id": wanted, "timestamp": "2024-01-02T03:04:05Z",
    }).json()
    assert body["memory_id"] == wanted and body["embedding_status"] == "provided"
    assert body["type"] == "Insight" and body["confidence"] == 0.9
    assert body["timestamp"].startswith("2024-01-02T03:04:05")
    assert_error(client.post("/memory", json={"content": "again", "id": wanted}), 400, "exists")


@pytest.mark.parametrize("kwargs, fragment", [
    ({"content": b"", "headers": JSON_TYPE}, "JSON body is required"),
    ({"content": b"{not json", "headers": JSON_TYPE}, "JSON body is required"),
    ({"content": b"[1, 2]", "headers": JSON_TYPE}, "JSON body is required"),
    ({"content": b'"text"', "headers": JSON_TYPE}, "JSON body is required"),
    ({"content": b'{"content": NaN}', "headers": JSON_TYPE}, "JSON body is required"),
    ({"content": b"\xff\xfe\x00garbage", "headers": JSON_TYPE}, "JSON body is required"),
    ({"json": {}}, "content"),
    ({"json": {"content": "   "}}, "content"),
    ({"json": {"content": 42}}, "content"),
    ({"json": {"content": "x" * 2001}}, "2000"),
    ({"json": {"content": "ok", "importance": 1.5}}, "between 0 and 1"),
    ({"json": {"content": "ok", "importance": "high"}}, "importance"),
    ({"json": {"content": "ok", "confidence": -1}}, "confidence"),
    ({"json": {"content": "ok", "metadata": ["a"]}}, "metadata"),
    ({"json": {"content": "ok", "tags": 5}}, "tags"),
    ({"json": {"content": "ok", "embedding": [0.1, 0.2]}}, f"exactly {DIMS}"),
    ({"json": {"content": "ok", "embedding": ["a"] * DIMS}}, "numeric"),
    ({"json": {"content": "ok", "timestamp": "not a date"}}, "timestamp"),
    ({"json": {"content": "ok", "t_valid": "nope"}}, "t_valid"),
    ({"json": {"content": "ok", "id": "not-a-uuid"}}, "uuid"),
])
def test_store_memory_rejects_bad_input(client, store, kwargs, fragment):
    before = store.health()["memory_count"]
    assert_error(client.post("/memory", **kwargs), 400, fragment)
    assert store.health()["memory_count"] == before


def test_body_too_large_is_413(client, store, monkeypatch):
    from localmem import request_body as body_module

    monkeypatch.setattr(body_module, "MAX_BODY_BYTES", 1000)
    before = store.health()["memory_count"]
    big = json.dumps({"content": "x" * 1500}).encode()
    assert_error(client.post("/memory", content=big, headers=JSON_TYPE), 413, "exceeds")  # by Content-Length

    def chunks():  # no Content-Length: counted while streaming
        yield big[:600]
        yield big[600:]

    assert_error(client.post("/memory", content=chunks(), headers=JSON_TYPE), 413, "exceeds")
    assert store.health()["memory_count"] == before


# --- POST /memory/batch ------------------------------------------------------------------


def test_batch_stores_all(client, store):
    before = store.health()["memory_count"]
    response = client.post("/memory/batch", json={"memories": [
        {"content": "batch one", "tags": ["batch-t"]},
        {"content": "batch two", "importance": 0.9},
        {"content": "batch three", "embedding": [0.5] * DIMS},
    ]})
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "success" and body["stored"] == 3 and len(body["memory_ids"]) == 3
    assert body["qdrant"] == "stored (3)" and "query_time_ms" in body
    assert store.health()["memory_count"] == before + 3


@pytest.mark.parametrize("payload, fragment", [
    ({}, "non-empty array"),
    ({"memories": []}, "non-empty array"),
    ({"memories": "nope"}, "non-empty array"),
    ({"memories": [{"content": f"m{i}"} for i in range(501)]}, "Batch size limit is 500"),
    ({"memories": [{"content": "ok"}, "text"]}, "index 1 must be an object"),
    ({"memories": [{"content": "ok"}, {"tags": ["x"]}]}, "index 1"),
    ({"memories": [{"content": "ok"}, {"content": "ok", "importance": 7}]}, "index 1"),
])
def test_batch_rejects_bad_input_and_stores_nothing(client, store, payload, fragment):
    before = store.health()["memory_count"]
    assert_error(client.post("/memory/batch", json=payload), 400, fragment)
    assert store.health()["memory_count"] == before


def test_batch_of_500_is_accepted(client):
    response = client.post("/memory/batch", json={
        "memories": [{"content": f"bulk memory {i}", "tags": ["bulk-500"]} for i in range(500)]})
    assert response.status_code == 201 and response.json()["stored"] == 500
    assert client.delete("/memory/by-tag?tags=bulk-500").json()["deleted_count"] == 500


# --- GET / PATCH / DELETE /memory/{id} -----------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_memory_by_id_bad_and_unknown_ids(client, method):
    kwargs = {"json": {"importance": 0.5}} if method == "PATCH" else {}
    assert_error(client.request(method, "/memory/not-a-uuid", **kwargs), 400, "valid UUID")
    assert_error(client.request(method, f"/memory/{MISSING_ID}", **kwargs), 404, "not found")


def test_get_patch_delete_memory(client):
    mid = new_memory(client, "Patch me please", tags=["patch"], metadata={"a": 1})
    got = client.get(f"/memory/{mid.upper()}")
    assert got.status_code == 200 and got.json()["memory"]["id"] == mid
    response = client.patch(f"/memory/{mid}", json={
        "content": "Patched content", "tags": ["patched"], "importance": 0.9,
        "metadata": {"b": 2}, "memory_id": mid, "t_invalid": "2030-01-01T00:00:00Z"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "success" and body["memory_id"] == mid
    memory = body["memory"]
    assert memory["content"] == "Patched content" and memory["tags"] == ["patched"]
    assert memory["importance"] == 0.9 and memory["metadata"] == {"b": 2}
    assert memory["t_invalid"].startswith("2030-01-01")
    assert client.get(f"/memory/{mid}").json()["memory"]["content"] == "Patched content"

    assert_error(client.patch(f"/memory/{mid}", content=b"nope", headers=JSON_TYPE), 400, "JSON body is required")
    assert_error(client.patch(f"/memory/{mid}", json={"importance": 2}), 400, "between 0 and 1")
    assert_error(client.patch(f"/memory/{mid}", json={"content": ""}), 400, "content")
    assert_error(client.patch(f"/memory/{mid}", json={"timestamp": "garbage"}), 400, "timestamp")
    assert client.get(f"/memory/{mid}").json()["memory"]["importance"] == 0.9

    deleted = client.delete(f"/memory/{mid}")
    assert deleted.status_code == 200 and deleted.json() == {"status": "success", "memory_id": mid}
    assert_error(client.get(f"/memory/{mid}"), 404)
    assert_error(client.delete(f"/memory/{mid}"), 404)


def test_get_marks_memory_accessed(client, store):
    mid = new_memory(client, "accessed later", timestamp="2020-01-01T00:00:00Z")
    assert client.get(f"/memory/{mid}").json()["memory"]["last_accessed"].startswith("2020")
    assert not store.get(mid)["last_accessed"].startswith("2020")


def test_reserved_paths_are_routes_not_ids(client):
    response = client.patch("/memory/by-tag", json={})
    assert_error(response, 405)
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "DELETE"}
    assert_error(client.get("/memory/batch"), 405)
    response = client.post("/memory/by-tag", json={})
    assert_error(response, 405)
    assert "DELETE" in response.headers["allow"]


# --- by-tag ------------------------------------------------------------------------------------


def test_by_tag_repeated_and_comma_separated(client):
    a = new_memory(client, "tagged alpha", tags=["bt-alpha"], importance=0.9)
    b = new_memory(client, "tagged beta", tags=["BT-Beta"], importance=0.4)
    new_memory(client, "tagged gamma", tags=["bt-gamma"])
    repeated = client.get("/memory/by-tag?tags=bt-alpha&tags=bt-beta").json()
    comma = client.get("/memory/by-tag?tags=bt-alpha,bt-beta").json()
    assert [m["id"] for m in repeated["memories"]] == [a, b]
    assert [m["id"] for m in comma["memories"]] == [a, b]
    assert repeated["count"] == 2 and repeated["has_more"] is False

    page = client.get("/memory/by-tag?tags=bt-alpha,bt-beta&limit=1").json()
    assert page["count"] == 1 and page["has_more"] is True and page["next_offset"] == 1
    page2 = client.get("/memory/by-tag?tags=bt-alpha,bt-beta&limit=1&offset=1").json()
    assert [m["id"] for m in page2["memories"]] == [b] and page2["has_more"] is False


@pytest.mark.parametrize("query, fragment", [
    ("", "'tags' query parameter is required"),
    ("?tags=", "'tags' query parameter is required"),
    ("?tags=x&limit=ten", "limit"),
    ("?tags=x&offset=-1", "offset"),
    ("?tags=x&offset=abc", "offset"),
])
def test_by_tag_bad_parameters(client, query, fragment):
    assert_error(client.get(f"/memory/by-tag{query}"), 400, fragment)
    if query and "tags=x" not in query:
        assert_error(client.delete(f"/memory/by-tag{query}"), 400, fragment)


def test_delete_by_tag(client, store):
    ids = [new_memory(client, f"doomed {i}", tags=["doomed", f"d{i}"]) for i in range(3)]
    keep = new_memory(client, "kept", tags=["kept-tag"])
    before = store.health()["memory_count"]
    response = client.delete("/memory/by-tag?tags=DOOMED&tags=kept-nothing")
    assert response.status_code == 200
    assert response.json() == {"status": "success", "tags": ["doomed", "kept-nothing"],
                               "deleted_count": 3}
    assert store.health()["memory_count"] == before - 3
    for mid in ids:
        assert_error(client.get(f"/memory/{mid}"), 404)
    assert client.get(f"/memory/{keep}").status_code == 200


# --- associate ----------------------------------------------------------------------------------


def test_associate_single(client):
    a = new_memory(client, "assoc source")
    b = new_memory(client, "assoc target")
    response = client.post("/associate", json={
        "memory1_id": a, "memory2_id": b, "type": "leads_to", "strength": 0.8,
        "reason": "because"})
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "success" and body["relation_type"] == "LEADS_TO"
    assert body["strength"] == 0.8 and body["reason"] == "because"
    assert body["message"] == f"Association created between {a} and {b}"
    default = client.post("/associate", json={"memory1_id": a, "memory2_id": b}).json()
    assert default["relation_type"] == "RELATES_TO" and default["strength"] == 0.5


@pytest.mark.parametrize("payload, code, fragment", [
    ({}, 400, "are required"),
    ({"memory1_id": "A"}, 400, "are required"),
    ({"memory1_id": "nope", "memory2_id": "B"}, 400, "valid UUID"),
    ({"memory1_id": "A", "memory2_id": "A"}, 400, "itself"),
    ({"memory1_id": "A", "memory2_id": "B", "type": "LOVES"}, 400, "Relation type must be one of"),
    ({"memory1_id": "A", "memory2_id": "B", "type": "SIMILAR_TO"}, 400, "Relation type must be"),
    ({"memory1_id": "A", "memory2_id": "B", "type": 7}, 400, "Relation type must be one of"),
    ({"memory1_id": "A", "memory2_id": "B", "strength": 1.5}, 400, "between 0 and 1"),
    ({"memory1_id": "A", "memory2_id": "B", "strength": "strong"}, 400, "strength"),
    ({"memory1_id": "A", "memory2_id": MISSING_ID}, 404, "do not exist"),
])
def test_associate_errors(client, payload, code, fragment):
    ids = {"A": new_memory(client, "assoc error a"), "B": new_memory(client, "assoc error b")}
    body = {k: ids.get(v, v) if isinstance(v, str) and k.endswith("_id") else v
            for k, v in payload.items()}
    assert_error(client.post("/associate", json=body), code, fragment)


def test_associate_batch_all_ok_partial_and_none(client):
    a, b, c = (new_memory(client, f"batch assoc {i}") for i in range(3))
    ok = client.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": b},
        {"memory1_id": b, "memory2_id": c, "type": "PART_OF", "strength": 0.3, "role": "child"},
    ]})
    assert ok.status_code == 201
    body = ok.json()
    assert body["status"] == "success" and body["created_count"] == 2 and body["failed_count"] == 0
    assert body["summary"] == "2/2 associations created successfully"
    assert body["succeeded"][1] == {"index": 1, "memory1_id": b, "memory2_id": c,
                                    "relation_type": "PART_OF", "strength": 0.3}

    partial = client.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": c},
        {"memory1_id": a, "memory2_id": a},
        "not an object",
        {"memory1_id": a, "memory2_id": MISSING_ID},
    ]})
    assert partial.status_code == 207
    body = partial.json()
    assert body["status"] == "partial_success"
    assert body["created_count"] == 1 and body["failed_count"] == 3
    assert [f["index"] for f in body["failed"]] == [1, 2, 3]
    assert "itself" in body["failed"][0]["reason"]
    assert "do not exist" in body["failed"][2]["reason"]
    assert body["summary"] == "1/4 associations created successfully"

    none = client.post("/associate", json={"associations": [{"memory1_id": a, "memory2_id": a}]})
    body = assert_error(none, 400, "No associations were created")
    assert body["failed_count"] == 1 and body["created_count"] == 0


@pytest.mark.parametrize("associations, fragment", [
    ([], "non-empty array"),
    ("x", "non-empty array"),
    ([{"memory1_id": MISSING_ID, "memory2_id": MISSING_ID}] * 501, "Batch size limit is 500"),
])
def test_associate_batch_bad_input(client, associations, fragment):
    assert_error(client.post("/associate", json={"associations": associations}), 400, fragment)


# --- recall ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recall_data(client) -> dict[str, str]:
    return {
        "kafka": new_memory(client, "Kafka consumer lag alerting runbook", tags=["rc-ops", "a,b"],
                            importance=0.9, timestamp="2024-03-01T00:00:00Z"),
        "kafka2": new_memory(client, "Kafka partitions were rebalanced for throughput",
                             tags=["rc-ops", "rc-temp"], importance=0.4,
                             timestamp="2024-03-05T00:00:00Z"),
        "zebra": new_memory(client, "Zebra striping in the dashboard tables", tags=["rc-ui"],
                            timestamp="2024-02-01T00:00:00Z"),
    }


def _ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["results"]]


def test_recall_happy_path(client, recall_data):
    response = client.get("/recall", params={"query": "kafka consumer lag", "limit": 3})
    ids = _ids(response)
    body = response.json()
    assert ids[0] == recall_data["kafka"]
    assert body["status"] == "success" and body["count"] == len(ids) <= 3
    for key in ("results", "dedup_removed", "sort", "state_mode", "vector_search", "tag_mode",
                "tag_match", "query_time_ms"):
        assert key in body, key
    result = body["results"][0]
    for key in ("id", "memory", "final_score", "match_type", "score_components", "relations"):
        assert key in result, key


def test_recall_list_parameters_repeated_and_comma_separated(client, recall_data):
    kafka = ["kafka", "kafka2"]
    base = {"query": "kafka", "tags": "rc-ops"}
    repeated = _ids(client.get("/recall", params=[*base.items(), ("exclude_tags", "rc-temp"),
                                                  ("exclude_tags", "rc-ui")]))
    comma = _ids(client.get("/recall", params={**base, "exclude_tags": "rc-temp,rc-ui"}))
    assert repeated == comma == [recall_data["kafka"]]
    # tags: repeated values and comma-separated ones are the same tags (unlike AutoMem, where
    # "rc-ops,rc-ui" is one tag that matches nothing: tag input is read one way everywhere).
    both = _ids(client.get("/recall", params=[("query", "kafka zebra"), ("tags", "rc-ops"),
                                              ("tags", "rc-ui"), ("limit", "10")]))
    assert {recall_data[k] for k in (*kafka, "zebra")} <= set(both)
    comma_tags = _ids(client.get("/recall", params={"query": "kafka zebra", "tags": "rc-ops,rc-ui",
                                                    "limit": "10"}))
    assert comma_tags == both
    literal = _ids(client.get("/recall", params={"query": "kafka", "tags": "a,b"}))
    assert literal == [recall_data["kafka"]]
    # queries: comma-split and repeated give the same query list.
    q1 = client.get("/recall", params={"queries": "kafka lag,zebra striping"}).json()
    q2 = client.get("/recall", params=[("queries", "kafka lag"), ("queries", "zebra striping")]).json()
    assert q1["queries"] == q2["queries"] == ["kafka lag", "zebra striping"]
    assert {r["id"] for r in q1["results"]} == {r["id"] for r in q2["results"]}


def test_recall_aliases_booleans_and_ignored_parameters(client, recall_data):
    body = client.get("/recall", params={
        "query": "kafka", "order_by": "time_asc", "expand": "YES", "format": "json",
        "offset": "3", "tags": "rc-ops", "tag_match": "exact", "current_only": "off"}).json()
    assert body["sort"] == "time_asc" and body["tag_match"] == "exact"
    assert body["expansion"]["enabled"] is True and body["state_mode"] == "history"
    assert [r["id"] for r in body["results"]] == [recall_data["kafka"], recall_data["kafka2"]]
    # A name and its alias agreeing are one value; disagreeing, a 400 naming the alias.
    same = client.get("/recall?order_by=time_asc&sort=time_asc&query=kafka&tags=rc-ops").json()
    assert same["sort"] == "time_asc"
    both = client.get("/recall?order_by=time_asc&sort=time_desc&query=kafka&tags=rc-ops")
    assert both.status_code == 400 and "'order_by'" in both.json()["message"]
    # Blank values are as good as absent.
    blank = client.get("/recall?query=kafka&limit=&state_mode=&embedding=&start=")
    assert blank.status_code == 200 and blank.json()["state_mode"] == "current"


def test_recall_embedding_and_time_window(client, recall_data):
    vector = ",".join(["0.05"] * DIMS)
    body = client.get(f"/recall?embedding={vector}&limit=2").json()
    assert body["vector_search"]["enabled"] is True and body["count"] <= 2
    window = client.get("/recall", params={"start": "2024-03-02T00:00:00Z",
                                           "end": "2024-03-31T00:00:00Z", "tags": "rc-ops"})
    assert _ids(window) == [recall_data["kafka2"]]
    assert window.json()["sort"] == "time_desc"


@pytest.mark.parametrize("query, fragment", [
    ("state_mode=sometimes", "'state_mode' must be one of current, history"),
    ("state_mode=bogus&current_only=true", "state_mode"),
    ("embedding=0.1,0.2,0.3", f"exactly {DIMS} values"),
    ("embedding=a,b", "numeric"),
    ("start=yesterday-ish", "Invalid start"),
    ("end=2024-13-45", "Invalid end"),
    ("query=a%00b", "NUL"),
])
def test_recall_bad_parameters(client, query, fragment):
    assert_error(client.get(f"/recall?{query}"), 400, fragment)


def test_recall_caps_a_huge_limit_and_refuses_a_non_number(client):
    response = client.get("/recall?limit=100000&query=kafka")
    assert response.status_code == 200
    assert any("above the maximum" in w for w in response.json()["warnings"])
    response = client.get("/recall?limit=many&query=kafka")
    assert response.status_code == 400 and "'limit'" in response.json()["message"]


# --- related ------------------------------------------------------------------------------------------


def test_related_memories(client):
    a, b, c = (new_memory(client, f"related chain {i}") for i in range(3))
    assert client.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": b, "type": "LEADS_TO"},
        {"memory1_id": b, "memory2_id": c, "type": "PART_OF"}]}).status_code == 201
    body = client.get(f"/memories/{a}/related").json()
    assert body["status"] == "success" and [m["id"] for m in body["related_memories"]] == [b]
    deep = client.get(f"/memories/{a}/related?max_depth=2&limit=10").json()
    assert {m["id"] for m in deep["related_memories"]} == {b, c} and deep["max_depth"] == 2
    typed = client.get(f"/memories/{a}/related?relationship_types=part_of,relates_to").json()
    assert typed["related_memories"] == [] and typed["relationship_types"] == ["PART_OF", "RELATES_TO"]
    repeated = client.get(f"/memories/{b}/related?relationship_types=PART_OF&relationship_types=LEADS_TO")
    assert {m["id"] for m in repeated.json()["related_memories"]} == {a, c}

    assert_error(client.get(f"/memories/{a}/related?relationship_types=LOVES"), 400, "LOVES")
    assert_error(client.get(f"/memories/{a}/related?max_depth=deep"), 400, "max_depth")
    assert_error(client.get(f"/memories/{a}/related?limit=x"), 400, "limit")
    assert_error(client.get("/memories/not-a-uuid/related"), 400, "valid UUID")
    assert_error(client.get(f"/memories/{MISSING_ID}/related"), 404, "not found")


# --- Kagura recall, routing errors, 500 -----------------------------------------------------------


class _ProbeStore(MemoryStore):
    """recall_v1 echoes its arguments; recall fails the way a bug would."""

    def recall_v1(self, query, *, k=5, filters=None, search_mode=None, use_rerank=None,
                  include_explore_hints=False, include_superseded=False, full=None, now=None):
        return {"query": query, "k": k, "filters": filters, "search_mode": search_mode}

    def recall(self, query=None, **params):
        raise RuntimeError("kaboom: internal detail /secret/path")


def test_unauthenticated_server_recall_v1_dispatch_and_500(caplog, monkeypatch):
    monkeypatch.delenv("LOCALMEM_API_TOKEN", raising=False)
    monkeypatch.delenv("AUTOMEM_API_TOKEN", raising=False)
    with _ProbeStore(":memory:", embedder="hash") as s, running(create_app(s, token="")) as url, \
            httpx.Client(base_url=url) as c:
        assert c.get("/memory/by-tag?tags=x").status_code == 200  # no token configured
        response = c.post("/api/v1/memory/recall", json={
            "query": "auth errors", "k": 3, "filters": {"context_id": "work"}})
        assert response.status_code == 200
        assert response.json() == {"query": "auth errors", "k": 3,
                                   "filters": {"context_id": "work"}, "search_mode": None}
        # Invalid requests are 422 (Kagura's validation error), before the store is called.
        assert_error(c.post("/api/v1/memory/recall", json={"k": 3}), 422, "query")
        assert_error(c.post("/api/v1/memory/recall", content=b"[]", headers=JSON_TYPE), 422, "JSON body is required")
        with caplog.at_level(logging.ERROR, logger="localmem.http"):
            broken = c.get("/recall?query=x")
        body = assert_error(broken, 500)
        assert body == {"status": "error", "code": 500, "message": "Internal server error"}
        assert "kaboom" not in broken.text
        assert any(r.exc_info and "kaboom" in str(r.exc_info[1]) for r in caplog.records)


@pytest.mark.parametrize("method, path, code", [
    ("GET", "/nope", 404),
    ("GET", "/memory/", 404),
    ("GET", "/memories", 404),
    ("GET", "/memory", 405),
    ("DELETE", "/recall", 405),
    ("GET", "/associate", 405),
    ("PUT", "/memory/" + MISSING_ID, 405),
    ("POST", "/health", 405),
    ("GET", "/api/v1/memory/recall", 405),
])
def test_unknown_routes_and_wrong_methods(client, method, path, code):
    response = client.request(method, path)
    assert_error(response, code)
    if code == 405:
        assert response.headers.get("allow")


# --- serve() -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "",
                                  "localhost.example.com", "::ffff:10.0.0.1"])
def test_serve_refuses_non_loopback_without_token(monkeypatch, host):
    monkeypatch.delenv("LOCALMEM_API_TOKEN", raising=False)
    monkeypatch.delenv("AUTOMEM_API_TOKEN", raising=False)
    with MemoryStore(":memory:", embedder="hash") as s, \
            pytest.raises(ConfigError, match="API token"):
        serve(s, host=host, port=0)
    assert not is_loopback(host)
    check_bind(host, "a-token")  # with a token it is allowed


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost",
                                  "LOCALHOST", "::ffff:127.0.0.1"])
def test_loopback_addresses_need_no_token(host):
    assert is_loopback(host)
    check_bind(host, None)


def test_core_package_imports_without_starlette():
    code = ("import sys, localmem, localmem.http, localmem.http.server, localmem.http.security; "
            "assert not any(m.split('.')[0] in ('starlette', 'uvicorn') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith(('starlette', 'uvicorn')))")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- concurrency ------------------------------------------------------------------------------------


def test_concurrent_requests(base_url, store):
    before = store.health()
    threads, calls = 8, 25

    def worker(n: int) -> tuple[int, list[int]]:
        statuses: list[int] = []
        stored = 0
        with httpx.Client(base_url=base_url, headers=AUTH, timeout=30) as c:
            for i in range(calls):
                kind = (n + i) % 4
                if kind == 0:
                    r = c.post("/memory", json={"content": f"concurrent {n}-{i} about queues",
                                                "tags": ["concurrent", f"w{n}"]})
                    stored += r.status_code == 201
                elif kind == 1:
                    r = c.post("/memory/batch", json={"memories": [
                        {"content": f"concurrent batch {n}-{i}-{j}", "tags": ["concurrent"]}
                        for j in range(2)]})
                    stored += 2 * (r.status_code == 201)
                elif kind == 2:
                    r = c.get("/recall", params={"query": "concurrent queues", "limit": 5})
                else:
                    r = c.get("/memory/by-tag", params={"tags": f"w{n}", "limit": 5})
                statuses.append(r.status_code)
        return stored, statuses

    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(worker, range(threads)))
    statuses = [s for _, ss in results for s in ss]
    assert len(statuses) == threads * calls
    assert all(s in (200, 201) for s in statuses), sorted(set(statuses))
    stored = sum(n for n, _ in results)
    after = store.health()
    assert after["memory_count"] == before["memory_count"] + stored
    assert after["indexes_agree"] is True
    assert after["vector_count"] == after["memory_count"] == after["fts_count"]
    assert after["memories_without_embedding"] == 0
    served = httpx.get(f"{base_url}/health", headers=AUTH).json()
    assert served["memory_count"] == after["memory_count"] and served["sync_status"] == "synced"
