"""POST /api/v1/memory/recall: the 200 body, 422 bodies, the uniform 404 for a
hidden context, context-scoped tokens and authentication (localmem.http)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterator

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from localmem import ConfigError, MemoryStore  # noqa: E402
from localmem.http.app import create_app  # noqa: E402
from localmem.http.security import Grant, parse_scoped_tokens, resolve_tokens  # noqa: E402
from localmem.pytest_plugin import FIXED_NOW  # noqa: E402

URL = "/api/v1/memory/recall"
ADMIN = "admin-token-for-tests"
WORK = "work-only-token"
PADDED = "c2NvcGVkLXRva2VuLXdpdGgtcGFkZGluZw=="  # base64 with '=' padding
ENV_NAMES = ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS")
# The server answers only loopback Host names (TestClient's default is "testserver").
LOCAL = "http://localhost"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store(memory_store_factory) -> MemoryStore:
    s = memory_store_factory()
    when = (FIXED_NOW - timedelta(days=3)).isoformat()
    s.store("Redis cache eviction policy is allkeys-lru", context="work", tags=["redis", "ops"],
            timestamp=when, importance=0.9)
    s.store("Redis sentinel failover takes ten seconds", context="work", tags=["redis"], timestamp=when)
    s.store("Redis the cat eats at seven", context="home", tags=["cat"], timestamp=when)
    s.store("Redis notes in the default context", tags=["redis"], timestamp=when)
    s.store("Redis maintenance window", context="work", timestamp=when,
            t_valid=(FIXED_NOW + timedelta(days=20)).isoformat())
    return s


@pytest.fixture
def client(store) -> Iterator[TestClient]:
    app = create_app(store, token=ADMIN, tokens={WORK: ["work"], PADDED: "work,default"})
    with TestClient(app, base_url=LOCAL) as c:
        yield c


def post(client: TestClient, body: Any, token: str | None = ADMIN, **kwargs: Any):
    headers = bearer(token) if token else {}
    if isinstance(body, (bytes, str)):
        return client.post(URL, content=body, headers={**headers, "Content-Type": "application/json"},
                           **kwargs)
    return client.post(URL, json=body, headers=headers, **kwargs)


# --- 200 ---------------------------------------------------------------------------


def test_recall_body(client, store):
    response = post(client, {
        "query": "redis cache eviction", "k": 2, "use_rerank": False,
        "filters": {"context_id": "work", "scope": "persistent", "tags": ["redis"]},
        "search_mode": "hybrid", "include_explore_hints": True, "include_superseded": False,
        "full": 1})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"results", "related_tags", "explore_hints", "tag_suggestions", "confidence",
                         "selector", "rerank", "learned_rank", "search_mode", "query_time_ms"}
    assert body["selector"] == {"applied": False, "reason": "no_provider"}
    assert body["rerank"] == {"applied": False, "reason": "disabled"}
    assert body["learned_rank"]["applied"] is False and "hash" in body["learned_rank"]["reason"]
    results = body["results"]
    assert len(results) == 2 and all(r["context"] == "work" for r in results)
    first = results[0]
    assert first["summary"] == "Redis cache eviction policy is allkeys-lru"
    assert first["content"] == first["summary"] and first["content_truncated"] is False
    assert results[1]["content"] is None
    assert {"memory_id", "summary", "context_summary", "type", "importance", "scope", "created_at",
            "updated_at", "client", "tags", "context", "score", "source_uri", "source_type",
            "superseded_by", "contradicts", "supersede_candidate", "folded", "version", "content",
            "content_truncated", "content_next_offset", "spans"} <= set(first)
    assert first["spans"][0] == {"start": 0, "end": 5, "term": "redis"}
    assert body["explore_hints"][0] == {"memory_id": first["memory_id"], "reason": "top_result"}
    # counted within the searched context: two "redis" memories in "work"
    assert body["related_tags"][0]["tag"] == "redis" and body["related_tags"][0]["count"] == 2
    assert body["confidence"]["level"] in ("none", "low", "moderate", "high")
    assert body["confidence"]["result_count"] == 2
    assert body["tag_suggestions"] is None


def test_degraded_over_http(memory_store_factory):
    store = memory_store_factory(embedder="none")
    store.store("Redis cache eviction policy is allkeys-lru")
    with TestClient(create_app(store, token=ADMIN), base_url=LOCAL) as c:
        body = post(c, {"query": "redis eviction"}).json()
    assert body["degraded"] is True and body["degraded_reason"] == "embedding_unavailable"
    assert len(body["results"]) == 1


def test_now_in_the_body_is_refused(client):
    # The maintenance window becomes valid in 20 days; a body cannot move the clock.
    response = post(client, {"query": "redis maintenance window", "k": 10,
                             "now": (FIXED_NOW + timedelta(days=40)).isoformat()})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "now"]


def test_tag_suggestions_and_superseded_over_http(client, store):
    body = post(client, {"query": "redis", "filters": {"tags": ["Redi"]}}).json()
    assert body["results"] == [] and body["tag_suggestions"] == {"Redi": ["redis"]}
    old = store.store("Cache TTL is one hour", context="work")
    new = store.supersede(old, "Cache TTL is ten minutes", context="work")["memory_id"]
    body = post(client, {"query": "cache ttl hour", "include_superseded": True,
                         "filters": {"context_id": "work"}}).json()
    rows = {r["memory_id"]: r for r in body["results"]}
    assert rows[old]["folded"] is True and rows[old]["superseded_by"] == new
    assert rows[new]["version"] == 2


# --- 422 ---------------------------------------------------------------------------


@pytest.mark.parametrize("payload, loc", [
    ({"k": 3}, ["body", "query"]),
    ({"query": ""}, ["body", "query"]),
    ({"query": ["a"]}, ["body", "query"]),
    ({"query": "x", "k": 0}, ["body", "k"]),
    ({"query": "x", "k": 1000}, ["body", "k"]),
    ({"query": "x", "k": "five"}, ["body", "k"]),
    ({"query": "x", "use_rerank": "sometimes"}, ["body", "use_rerank"]),
    ({"query": "x", "filters": []}, ["body", "filters"]),
    ({"query": "x", "filters": {"context": "work"}}, ["body", "filters", "context"]),
    ({"query": "x", "filters": {"tag_mode": "some"}}, ["body", "filters", "tag_mode"]),
    ({"query": "x", "search_mode": "vector"}, ["body", "search_mode"]),
    ({"query": "x", "include_explore_hints": "yes"}, ["body", "include_explore_hints"]),
    ({"query": "x", "include_superseded": 2}, ["body", "include_superseded"]),
    ({"query": "x", "full": -2}, ["body", "full"]),
    (b"[1, 2]", ["body"]),
    (b"{not json", ["body"]),
    (b"", ["body"]),
])
def test_invalid_requests_are_422_with_a_json_body(client, payload, loc):
    response = post(client, payload)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "error" and body["code"] == 422
    assert isinstance(body["message"], str) and body["message"]
    assert body["detail"][0]["loc"] == loc
    assert body["detail"][0]["msg"] and body["detail"][0]["type"]


def test_all_problems_in_one_422(client):
    body = post(client, {"query": "", "k": -1, "search_mode": "x"}).json()
    assert [d["loc"][-1] for d in body["detail"]] == ["query", "k", "search_mode"]


def test_wrong_method_is_405(client):
    response = client.get(URL, headers=bearer(ADMIN))
    assert response.status_code == 405 and response.json()["code"] == 405


# --- contexts and scoped tokens ------------------------------------------------------


def test_hidden_and_missing_contexts_are_the_same_404(client):
    hidden = post(client, {"query": "redis", "filters": {"context_id": "home"}}, token=WORK)
    missing = post(client, {"query": "redis", "filters": {"context_id": "no-such"}}, token=WORK)
    missing_admin = post(client, {"query": "redis", "filters": {"context_id": "no-such"}})
    for response in (hidden, missing, missing_admin):
        assert response.status_code == 404
        assert response.json() == {"status": "error", "code": 404, "message": "Context not found"}
    assert hidden.content == missing.content == missing_admin.content
    visible = post(client, {"query": "redis", "filters": {"context_id": "home"}})
    assert visible.status_code == 200 and visible.json()["results"][0]["context"] == "home"


def test_scoped_token_searches_only_its_contexts(client):
    everything = post(client, {"query": "redis", "k": 10}).json()
    assert {r["context"] for r in everything["results"]} == {"work", "home", "default"}
    work = post(client, {"query": "redis", "k": 10}, token=WORK).json()
    assert {r["context"] for r in work["results"]} == {"work"}
    assert {t["tag"] for t in work["related_tags"]} <= {"redis", "ops"}
    padded = post(client, {"query": "redis", "k": 10}, token=PADDED).json()
    assert {r["context"] for r in padded["results"]} == {"work", "default"}
    ok = post(client, {"query": "redis", "filters": {"context_id": "default"}}, token=PADDED)
    assert ok.status_code == 200


@pytest.mark.parametrize("method, path", [
    ("GET", "/recall?query=redis"),
    ("POST", "/memory"),
    ("GET", "/memory/by-tag?tags=redis"),
    ("GET", "/memory/6f1e1b8a-0000-4000-8000-000000000000"),
    ("POST", "/associate"),
])
def test_scoped_token_may_not_call_other_routes(client, method, path):
    response = client.request(method, path, headers=bearer(WORK), json={"content": "x"})
    assert response.status_code == 403
    assert response.json()["code"] == 403 and "scoped" in response.json()["message"]
    admin = client.request(method, path, headers=bearer(ADMIN), json={"content": "x"})
    assert admin.status_code != 403


def test_authentication(client):
    assert post(client, {"query": "redis"}, token=None).status_code == 401
    wrong = post(client, {"query": "redis"}, token="nope")
    assert wrong.status_code == 401 and wrong.json()["message"] == "Unauthorized"
    assert client.post(URL, json={"query": "redis"}, headers={"X-API-Key": WORK}).status_code == 200
    assert client.post(f"{URL}?api_key={WORK}", json={"query": "redis"}).status_code == 200
    assert client.get("/health").status_code == 200  # no token needed


def test_no_token_configured_means_no_auth(store):
    with TestClient(create_app(store), base_url=LOCAL) as c:
        assert c.post(URL, json={"query": "redis", "k": 10}).status_code == 200
        assert c.app.state.auth_required is False


# --- token configuration -----------------------------------------------------------


def test_scoped_tokens_from_the_environment(store, monkeypatch):
    monkeypatch.setenv("LOCALMEM_API_TOKENS", f" {WORK}=work ;\n{PADDED} = work, default\nall-access=*")
    with TestClient(create_app(store), base_url=LOCAL) as c:
        assert c.app.state.auth_required is True
        body = c.post(URL, json={"query": "redis", "k": 10}, headers=bearer(WORK)).json()
        assert {r["context"] for r in body["results"]} == {"work"}
        body = c.post(URL, json={"query": "redis", "k": 10}, headers=bearer(PADDED)).json()
        assert {r["context"] for r in body["results"]} == {"work", "default"}
        # TOKEN=* sees every context, through recall only: it is not the admin token.
        body = c.post(URL, json={"query": "redis", "k": 10}, headers=bearer("all-access")).json()
        assert {r["context"] for r in body["results"]} == {"work", "home", "default"}
        assert c.get("/recall?query=redis", headers=bearer("all-access")).status_code == 403
        assert c.post(URL, json={"query": "redis"}).status_code == 401
    monkeypatch.setenv("LOCALMEM_API_TOKEN", ADMIN)
    assert resolve_tokens() == {WORK: Grant(frozenset({"work"})), PADDED: Grant(frozenset({"work", "default"})),
                                "all-access": Grant(None), ADMIN: Grant(None, admin=True)}


def test_parse_scoped_tokens():
    assert parse_scoped_tokens("a=x,y; b=*") == {"a": frozenset({"x", "y"}), "b": None}
    assert parse_scoped_tokens("tok==x") == {"tok=": frozenset({"x"})}  # split at the last '='
    assert parse_scoped_tokens("  ") == {}


@pytest.mark.parametrize("text", ["just-a-token", "=work", "t=", "t= , ", "t=*,work", "a=x;a=y"])
def test_bad_token_configuration_is_refused(text):
    with pytest.raises(ConfigError):
        parse_scoped_tokens(text)


@pytest.mark.parametrize("text", ["alice=work , bob=*", "alice=work,bob=*", "a b=work"])
def test_entries_joined_by_commas_or_spaces_are_refused_not_read_as_one_token(text):
    # Before, "alice=work , bob=*" was one token "alice=work , bob" granted every context.
    with pytest.raises(ConfigError, match="separate entries with ';'"):
        parse_scoped_tokens(text)


def test_a_token_has_one_scope(store, monkeypatch):
    monkeypatch.setenv("LOCALMEM_API_TOKENS", f"{ADMIN}=work")
    with pytest.raises(ConfigError, match="one scope"):
        create_app(store, token=ADMIN)
    with pytest.raises(ConfigError):
        resolve_tokens(None, {"": ["work"]})
    with pytest.raises(ConfigError):
        resolve_tokens(None, {"t": []})


def test_serve_accepts_scoped_tokens_for_a_non_loopback_bind(store, monkeypatch):
    uvicorn = pytest.importorskip("uvicorn")
    from localmem.http.server import serve

    started: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: started.append(self.config.host))
    with pytest.raises(ConfigError, match="API token"):
        serve(store, host="0.0.0.0", port=0)
    monkeypatch.setenv("LOCALMEM_API_TOKENS", f"{WORK}=work")
    serve(store, host="0.0.0.0", port=0)  # a scoped token is a token: allowed
    assert started == ["0.0.0.0"]
