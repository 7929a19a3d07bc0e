"""Vocabulary that is true here: no Qdrant or FalkorDB in results, /health or POST /memory;
``source`` names the channel that found a result (issue 13, item 9)."""

from __future__ import annotations

import json

import pytest

from localmem import MemoryStore

TOKEN = "vocabulary-test-token-0123456789"
DIMS = 384


def by_content(response):
    return {r["memory"]["content"]: r for r in response["results"]}


def test_source_names_the_channel_that_found_each_result(memory_store_factory):
    store = memory_store_factory(embedder="hash")
    seed = store.store("Grafana dashboards for the payments service", tags=["entity:tools:grafana"])
    neighbour = store.store("Alert thresholds were tuned in March")
    store.associate(seed, neighbour, type="RELATES_TO", strength=0.9)
    store.store("Grafana runs behind the VPN", tags=["entity:tools:grafana"])
    found = by_content(store.recall("grafana dashboards payments", expand_relations=True,
                                    expand_entities=True, limit=1, adaptive_floor=False))
    assert found["Grafana dashboards for the payments service"]["source"] == "vector"
    assert found["Alert thresholds were tuned in March"]["source"] == "graph"
    assert found["Grafana runs behind the VPN"]["source"] == "entity"

    keyword_only = memory_store_factory(embedder="none")
    keyword_only.store("Grafana dashboards for the payments service")
    keyword_only.store("Unrelated note about lunch", importance=0.9)
    assert [r["source"] for r in keyword_only.recall("grafana")["results"]] == ["keyword"]
    assert {r["source"] for r in keyword_only.recall()["results"]} == {"trending"}

    old = keyword_only.store("We deploy with Ansible")
    keyword_only.supersede(old, "We deploy with Terraform now")
    [replacement] = keyword_only.recall("ansible")["results"]
    assert (replacement["match_type"], replacement["source"]) == ("state_replacement", "graph")
    assert "qdrant" not in json.dumps(store.recall("grafana", limit=10))


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(tmp_path_factory.mktemp("vocab") / "memory.db", embedder="hash") as store, \
            running(create_app(store, token=TOKEN)) as url, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def test_health_describes_sqlite_not_falkordb_or_qdrant(http):
    body = http.get("/health").json()
    assert "falkordb" not in body and "qdrant" not in body
    assert body["storage"] == {"engine": "sqlite", "full_text_index": "ok", "vector_index": "ok"}
    assert body["graph"] == "sqlite"
    # The fields AutoMem's MCP client reads are still there, with values that are true here.
    for key in ("status", "graph", "timestamp", "memory_count", "vector_count", "sync_status",
                "vector_dimensions", "enrichment"):
        assert key in body, key


def test_store_answers_vector_index_not_qdrant(http):
    single = http.post("/memory", json={"content": "The payments service uses Grafana"})
    assert single.status_code == 201
    body = single.json()
    assert "qdrant" not in body and body["vector_index"] == "stored"
    assert body["embedding_status"] == "generated"
    given = http.post("/memory", json={"content": "Given vector", "embedding": [0.5] * DIMS}).json()
    assert given["vector_index"] == "stored" and given["embedding_status"] == "provided"
    # AutoMem's MCP client shows the batch's "qdrant" summary: kept, with the vector index's count.
    batch = http.post("/memory/batch", json={"memories": [{"content": "one"}, {"content": "two"}]}).json()
    assert batch["qdrant"] == batch["vector_index"] == "stored (2)"
    recall = http.get("/recall", params={"query": "payments grafana"}).json()
    assert recall["results"] and "qdrant" not in json.dumps(recall)
    assert recall["results"][0]["source"] == "vector"


def test_a_scoped_token_sees_the_storage_state_and_no_store_names(tmp_path):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(tmp_path / "memory.db", embedder="hash") as store, \
            running(create_app(store, token=TOKEN, tokens={"scoped-" + TOKEN: ["work"]})) as url:
        reply = httpx.get(f"{url}/health", headers={"Authorization": f"Bearer scoped-{TOKEN}"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["storage"]["vector_index"] == "ok" and "qdrant" not in body and "falkordb" not in body
    assert "memory_count" not in body


def test_without_vectors_the_storage_says_so(tmp_path):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(tmp_path / "memory.db", embedder="none") as store, \
            running(create_app(store, token=TOKEN)) as url, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        stored = client.post("/memory", json={"content": "no vectors here"}).json()
        assert stored["vector_index"] == "unconfigured" and "qdrant" not in stored
        health = client.get("/health").json()
        assert health["storage"]["vector_index"] == "unconfigured" and "qdrant" not in health
