"""Redaction through each interface: on by default for MCP ``store_memory``, on request for the
CLI (``--redact``), HTTP (``{"redact": true}``) and the Python API; AutoMem's behaviour otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import uvicorn

from localmem import MemoryStore
from localmem.errors import ValidationError
from localmem.http.app import create_app
from tests.serving import in_thread
from tests.test_dedup import run_cli
from tests.test_mcp import StdioServer

STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dcQx"
TEXT = f"Billing uses STRIPE_SECRET_KEY={STRIPE} <private>and my home address</private>for charges."


def test_python_api_redacts_only_when_asked(tmp_path):
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        kept = store.get(store.store(TEXT))
        assert STRIPE in kept["content"] and "redacted" not in kept["metadata"]
        redacted = store.get(store.store(TEXT, redact=True, metadata={"note": f"key {STRIPE}"}))
        assert redacted["content"] == "Billing uses STRIPE_SECRET_KEY=[redacted: stripe-secret-key] for charges."
        assert redacted["metadata"] == {"note": "key [redacted: stripe-secret-key]", "redacted": {
            "count": 3, "kinds": {"private-region": 1, "stripe-secret-key": 2}}}
        ids = store.store_many([{"content": TEXT}, {"content": "nothing secret here"}], redact=True)
        assert [store.get(i)["content"].count(STRIPE) for i in ids] == [0, 0]
        with pytest.raises(ValidationError, match="redact"):
            store.store(TEXT, redact="yes")
        with pytest.raises(ValidationError, match="private"):
            store.store("<private>everything</private>", redact=True)


def test_mcp_store_memory_redacts_by_default_and_can_be_told_not_to(tmp_path):
    server = StdioServer(tmp_path / "mcp.db")
    try:
        stored = server.call("store_memory", {"content": TEXT, "tags": ["billing"]})
        assert not stored.is_error, stored.content[0].text
        assert "redacted before storing" in stored.content[0].text
        fetched = server.call("recall_memory", {"memory_id": stored.structured_content["memory_id"]})
        record = fetched.structured_content["results"][0]
        assert STRIPE not in json.dumps(record) and "[redacted: stripe-secret-key]" in record["content"]
        batch = server.call("store_memory", {"memories": [{"content": f"second key {STRIPE}"}]})
        assert not batch.is_error
        plain = server.call("store_memory", {"content": f"test fixture key {STRIPE}", "redact": False})
        fetched = server.call("recall_memory", {"memory_id": plain.structured_content["memory_id"]})
        assert STRIPE in fetched.structured_content["results"][0]["content"]
        bad = server.call("store_memory", {"content": "x", "redact": "no"})
        assert bad.is_error
    finally:
        server.close()
    with MemoryStore(tmp_path / "mcp.db", embedder="hash") as store:
        contents = [m["content"] for m in store.list_memories(limit=10)["memories"]]
    assert sum(STRIPE in c for c in contents) == 1  # only the one told not to redact


def test_cli_store_redacts_with_the_flag(tmp_path):
    db = tmp_path / "cli.db"
    done = run_cli(db, "store", "--redact", TEXT)
    assert done.returncode == 0, done.stderr
    assert "redacted before storing: 2 (private-region, stripe-secret-key)" in done.stderr
    as_json = run_cli(db, "--json", "get", done.stdout.strip())
    assert STRIPE not in as_json.stdout and "stripe-secret-key" in as_json.stdout
    plain = run_cli(db, "--json", "store", TEXT)
    assert STRIPE in json.loads(plain.stdout)["memory"]["content"]


def test_http_redacts_when_the_body_asks(tmp_path):
    store = MemoryStore(tmp_path / "http.db", embedder="hash")
    app = create_app(store, token="t0ken-for-privacy-tests")
    headers = {"Authorization": "Bearer t0ken-for-privacy-tests"}
    try:
        with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
            asked = httpx.post(f"{url}/memory", json={"content": TEXT, "redact": True}, headers=headers)
            assert asked.status_code == 201, asked.text
            assert STRIPE not in asked.text and asked.json()["metadata"]["redacted"]["count"] == 2
            batch = httpx.post(f"{url}/memory/batch", json={"memories": [{"content": TEXT}], "redact": True},
                               headers=headers)
            assert batch.status_code == 201 and STRIPE not in batch.text
            plain = httpx.post(f"{url}/memory", json={"content": TEXT}, headers=headers)
            assert plain.status_code == 201 and STRIPE in plain.json()["memory"]["content"]
            bad = httpx.post(f"{url}/memory", json={"content": TEXT, "redact": "yes"}, headers=headers)
            assert bad.status_code == 400 and "redact" in bad.text
    finally:
        store.close()
