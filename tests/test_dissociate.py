"""Removing edges, in every interface: ``MemoryStore.dissociate``, ``localmem dissociate``,
``DELETE /associate`` and ``associate_memories`` with ``remove: true`` (issue 13, item 4).

On main no interface could remove an edge: a wrong ``associate`` stayed for good.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore, NotFoundError, ValidationError
from tests.store_helpers import assert_rejected

REPO = Path(__file__).resolve().parents[1]
MISSING_ID = "00000000-0000-4000-8000-000000000000"


def edge_rows(store: MemoryStore) -> list[tuple[str, str, str]]:
    return sorted(store.conn.execute(
        "SELECT a.id, e.type, b.id FROM edges AS e JOIN memories AS a ON a.pk = e.src "
        "JOIN memories AS b ON b.pk = e.dst").fetchall())


@pytest.fixture
def pair(memory_store: MemoryStore) -> tuple[MemoryStore, str, str]:
    a = memory_store.store("The nightly export timed out")
    b = memory_store.store("Added an index on orders(created_at)")
    memory_store.associate(a, b, "LEADS_TO", 0.8)
    memory_store.associate(a, b, "RELATES_TO", 0.4)
    memory_store.associate(b, a, "RELATES_TO", 0.4)
    return memory_store, a, b


# -- Python API ---------------------------------------------------------------


def test_dissociate_one_type_leaves_the_others(pair):
    store, a, b = pair
    result = store.dissociate(a, b, "leads_to")
    assert result == {"memory1_id": a, "memory2_id": b, "relation_type": "LEADS_TO",
                      "removed": 1, "removed_types": ["LEADS_TO"]}
    assert edge_rows(store) == sorted([(a, "RELATES_TO", b), (b, "RELATES_TO", a)])


def test_dissociate_without_type_removes_every_edge_one_way_only(pair):
    store, a, b = pair
    result = store.dissociate(a, b)
    assert result["removed"] == 2 and result["removed_types"] == ["LEADS_TO", "RELATES_TO"]
    assert result["relation_type"] is None
    assert edge_rows(store) == [(b, "RELATES_TO", a)]  # the reverse edge stays


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda s, a, b: s.dissociate(a, b, "PART_OF"), NotFoundError, "No PART_OF edge from"),
    (lambda s, a, b: s.dissociate(a, MISSING_ID), NotFoundError, f"not found: {MISSING_ID}"),
    (lambda s, a, b: s.dissociate(MISSING_ID, b), NotFoundError, f"not found: {MISSING_ID}"),
    (lambda s, a, b: s.dissociate("nope", b), ValidationError, "memory1_id must be a valid UUID"),
    (lambda s, a, b: s.dissociate(a, None), ValidationError, "'memory1_id' and 'memory2_id' are required"),
    (lambda s, a, b: s.dissociate(a, b, ""), ValidationError, "'type' must be a relation type name"),
])
def test_dissociate_refuses_what_is_not_there(pair, call, error, message):
    store, a, b = pair
    assert_rejected(store, lambda: call(store, a, b), error, message)


def test_dissociate_twice_is_not_found(pair):
    store, a, b = pair
    store.dissociate(a, b)
    assert_rejected(store, lambda: store.dissociate(a, b), NotFoundError, f"No edge from {a} to {b}")


def test_undoing_a_supersede_warns_that_t_invalid_still_hides_the_old_memory(memory_store):
    old = memory_store.store("We use MongoDB")
    new = memory_store.supersede(old, "We use PostgreSQL", tags=["db"])["memory_id"]
    result = memory_store.dissociate(old, new)
    assert result["removed_types"] == ["INVALIDATED_BY"]
    assert len(result["warnings"]) == 1 and "t_invalid" in result["warnings"][0]
    assert old in result["warnings"][0]
    memory_store.update(old, t_invalid=None)
    assert memory_store.get(old, with_edges=True)["state"]["status"] == "current"


# -- CLI (a subprocess: the real entry point) -----------------------------------


def run_cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL")}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, encoding="utf-8", cwd=REPO, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO)}, check=False)


def test_cli_dissociate(tmp_path):
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        a, b = store.store("first"), store.store("second")
        store.associate(a, b, "LEADS_TO")
        store.associate(a, b, "RELATES_TO")
    one = run_cli(db, "dissociate", a, b, "--type", "leads_to")
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() == f"removed 1 edge {a} -> {b} (LEADS_TO)"
    rest = run_cli(db, "dissociate", a, b, "--json")
    assert rest.returncode == 0, rest.stderr
    assert json.loads(rest.stdout) == {"status": "success", "memory1_id": a, "memory2_id": b,
                                       "relation_type": None, "removed": 1, "removed_types": ["RELATES_TO"]}
    again = run_cli(db, "dissociate", a, b)
    assert again.returncode == 1 and again.stderr == f"error: No edge from {a} to {b}\n"
    bad = run_cli(db, "dissociate", a, "not-a-uuid")
    assert bad.returncode == 2 and "memory2_id 'not-a-uuid' is not a memory id or id prefix" in bad.stderr
    with MemoryStore(db, embedder="hash") as store:
        assert edge_rows(store) == []


# -- HTTP ------------------------------------------------------------------------


def test_http_delete_associate(memory_store):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    from localmem.http.app import create_app
    from tests.test_http import running

    store = memory_store
    a, b, c = store.store("first"), store.store("second"), store.store("third")
    store.associate(a, b, "LEADS_TO")
    store.associate(a, b, "RELATES_TO")
    store.associate(a, c, "PART_OF")
    with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=30) as client:
        by_query = client.delete("/associate", params={"memory1_id": a, "memory2_id": b, "type": "LEADS_TO"})
        assert by_query.status_code == 200, by_query.text
        assert by_query.json() == {"status": "success", "message": f"Removed 1 association from {a} to {b}",
                                   "memory1_id": a, "memory2_id": b, "relation_type": "LEADS_TO",
                                   "removed": 1, "removed_types": ["LEADS_TO"]}
        by_body = client.request("DELETE", "/associate", json={"memory1_id": a, "memory2_id": c})
        assert by_body.status_code == 200, by_body.text
        assert by_body.json()["removed_types"] == ["PART_OF"]
        gone = client.request("DELETE", "/associate", json={"memory1_id": a, "memory2_id": c})
        assert gone.status_code == 404 and f"No edge from {a} to {c}" in gone.json()["message"]
        missing = client.delete("/associate", params={"memory1_id": a, "memory2_id": MISSING_ID})
        assert missing.status_code == 404 and MISSING_ID in missing.json()["message"]
        for bad in ({}, {"params": {"memory1_id": a}}, {"json": {"memory1_id": a}}):
            response = client.request("DELETE", "/associate", **bad)
            assert response.status_code == 400, response.text
            assert "'memory1_id' and 'memory2_id' are required" in response.json()["message"]
        not_json = client.request("DELETE", "/associate", content=b"not json",
                                  headers={"Content-Type": "application/json"})
        assert not_json.status_code == 400 and "not valid JSON" in not_json.json()["message"]
        form = client.request("DELETE", "/associate", content=f"memory1_id={a}&memory2_id={b}",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415  # bodies are JSON only, as on every route
        typo = client.request("DELETE", "/associate", json={"memory1_id": a, "memory2_id": b, "tpye": "X"})
        assert typo.status_code == 400 and "unknown field 'tpye'" in typo.json()["message"]
        # POST /associate is still there
        assert client.post("/associate", json={"memory1_id": a, "memory2_id": c}).status_code == 201
    assert edge_rows(store) == sorted([(a, "RELATES_TO", b), (a, "RELATES_TO", c)])


# -- MCP (the stdio server through the SDK client) ----------------------------------


def test_mcp_associate_memories_remove(tmp_path):
    pytest.importorskip("mcp")
    from tests.test_mcp import StdioServer

    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        a, b = store.store("first"), store.store("second")
        store.associate(a, b, "LEADS_TO")
        store.associate(a, b, "RELATES_TO")
    server = StdioServer(db)
    try:
        schema = {t.name: t for t in server.run(server.client.list_tools()).tools}["associate_memories"]
        assert schema.input_schema["properties"]["remove"]["type"] == "boolean"
        one: Any = server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "type": "LEADS_TO",
                                                      "remove": True})
        assert not one.is_error, one.content[0].text
        assert one.structured_content["removed"] == 1
        assert one.content[0].text == f"Removed 1 association from {a} to {b} (LEADS_TO)."
        rest = server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "remove": True})
        assert not rest.is_error and rest.structured_content["removed_types"] == ["RELATES_TO"]
        again = server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "remove": True})
        assert again.is_error and f"No edge from {a} to {b}" in again.content[0].text
        mixed = server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "remove": True,
                                                   "strength": 0.5})
        assert mixed.is_error and "strength" in mixed.content[0].text
    finally:
        server.close()
    with MemoryStore(db, embedder="hash") as store:
        assert edge_rows(store) == []


def test_http_delete_associate_named_both_ways_is_refused(memory_store):
    """Query parameters named the edge and the body's ``type`` was never read: the call removed
    every edge from A to B where one type was meant."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    from localmem.http.app import create_app
    from tests.test_http import running

    store = memory_store
    a, b = store.store("first"), store.store("second")
    store.associate(a, b, "LEADS_TO")
    store.associate(a, b, "RELATES_TO")
    with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=30) as client:
        both = client.request("DELETE", "/associate", params={"memory1_id": a, "memory2_id": b},
                              json={"type": "LEADS_TO"})
        assert both.status_code == 400 and "not both" in both.json()["message"], both.text
        assert len(edge_rows(store)) == 2
        misspelt = client.delete("/associate", params={"memory1_id": a, "memory2_id": b, "typ": "LEADS_TO"})
        assert misspelt.status_code == 400 and "'typ'" in misspelt.json()["message"], misspelt.text
        assert len(edge_rows(store)) == 2  # a misspelt type removed every edge from a to b
        empty_body = client.request("DELETE", "/associate", params={"memory1_id": a, "memory2_id": b,
                                                                     "type": "LEADS_TO"}, json={})
        assert empty_body.status_code == 200, empty_body.text
    assert edge_rows(store) == [(a, "RELATES_TO", b)]
