"""Redaction of updates, supersessions and tags (issue 43's gaps): when redaction is asked for,
``update`` and ``supersede`` redact what they write as ``store`` does, and a tag holding a
credential is dropped. Through the Python API, the CLI (subprocess), HTTP (uvicorn) and MCP (the
SDK's client, where it is on by default); the raw bytes of the file are checked too."""

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
from tests.test_privacy_interfaces import STRIPE, TEXT

GITHUB = "ghp_" + "aB3dE5gH7jK9" * 3
PLACEHOLDER = "[redacted: stripe-secret-key]"


def raw_files(db: Path) -> bytes:
    return b"".join(Path(f"{db}{suffix}").read_bytes() for suffix in ("", "-wal")
                    if Path(f"{db}{suffix}").exists())


def test_python_update_supersede_and_tags_redact_when_asked(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        memory = store.store("Billing runs on the first of the month", tags=["billing"])
        updated = store.update(memory, redact=True, content=TEXT, tags=["billing", GITHUB],
                               metadata={"note": f"key {STRIPE}"})
        assert updated["content"] == f"Billing uses STRIPE_SECRET_KEY={PLACEHOLDER} for charges."
        assert updated["tags"] == ["billing"]  # the tag that was a token is dropped, not rewritten
        assert updated["metadata"] == {"note": f"key {PLACEHOLDER}", "redacted": {
            "count": 4, "kinds": {"github-token": 1, "private-region": 1, "stripe-secret-key": 2}}}
        # Without metadata in the update, the memory's own metadata is left as it is.
        again = store.update(memory, redact=True, content=f"rotated to {STRIPE}")
        assert STRIPE not in again["content"] and again["metadata"] == updated["metadata"]
        successor = store.supersede(memory, f"Billing moved to STRIPE_SECRET_KEY={STRIPE}", redact=True,
                                    tags=["billing"])
        new = store.get(successor["memory_id"])
        assert PLACEHOLDER in new["content"] and new["metadata"]["redacted"]["count"] == 1
        tagged = store.get(store.store("A note", tags=f"ops,{GITHUB}", redact=True))
        assert tagged["tags"] == ["ops"] and tagged["metadata"]["redacted"]["kinds"] == {"github-token": 1}
        with pytest.raises(ValidationError, match="redact"):
            store.update(memory, redact="yes", content=f"x {STRIPE}")
        with pytest.raises(ValidationError, match="private"):
            store.update(memory, redact=True, content="<private>all of it</private>")
        assert PLACEHOLDER in store.get(memory)["content"]  # a refused update wrote nothing
    raw = raw_files(db)  # nothing asked to be redacted reached the file, not even a freed page
    for secret in (STRIPE, GITHUB, GITHUB.lower()):
        assert secret.encode() not in raw, secret
    with MemoryStore(db, embedder="hash") as store:  # not asked: stored as given (AutoMem's behaviour)
        plain = store.update(memory, content=f"as given {STRIPE}", tags=["billing", GITHUB])
        assert STRIPE in plain["content"] and GITHUB in plain["tags"]


def test_cli_update_redacts_with_the_flag(tmp_path):
    db = tmp_path / "cli.db"
    memory = run_cli(db, "store", "Billing runs monthly").stdout.strip()
    done = run_cli(db, "--json", "update", memory, "--redact", "--content", TEXT, "--tags", f"billing,{GITHUB}")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)["memory"]
    assert STRIPE not in done.stdout and PLACEHOLDER in record["content"] and record["tags"] == ["billing"]
    plain = run_cli(db, "--json", "update", memory, "--content", f"as given {STRIPE}")
    assert STRIPE in json.loads(plain.stdout)["memory"]["content"]


def test_http_patch_redacts_when_the_body_asks(tmp_path):
    store = MemoryStore(tmp_path / "http.db", embedder="hash")
    app = create_app(store, token="t0ken-for-privacy-tests")
    headers = {"Authorization": "Bearer t0ken-for-privacy-tests"}
    try:
        memory = store.store("Billing runs monthly")
        with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
            asked = httpx.patch(f"{url}/memory/{memory}", json={"content": TEXT, "redact": True}, headers=headers)
            assert asked.status_code == 200, asked.text
            assert STRIPE not in asked.text and PLACEHOLDER in asked.json()["memory"]["content"]
            bad = httpx.patch(f"{url}/memory/{memory}", json={"content": TEXT, "redact": "yes"}, headers=headers)
            assert bad.status_code == 400 and "redact" in bad.text
            plain = httpx.patch(f"{url}/memory/{memory}", json={"content": TEXT}, headers=headers)
            assert plain.status_code == 200 and STRIPE in plain.json()["memory"]["content"]
    finally:
        store.close()


def test_mcp_update_memory_redacts_by_default_and_can_be_told_not_to(tmp_path):
    server = StdioServer(tmp_path / "mcp.db")
    try:
        stored = server.call("store_memory", {"content": "Billing runs monthly", "tags": ["billing"]})
        memory = stored.structured_content["memory_id"]
        updated = server.call("update_memory", {"memory_id": memory, "content": TEXT, "tags": ["billing", GITHUB]})
        assert not updated.is_error, updated.content[0].text
        assert "redacted before storing" in json.dumps(updated.structured_content)
        record = server.call("recall_memory", {"memory_id": memory}).structured_content["results"][0]
        assert STRIPE not in json.dumps(record) and GITHUB not in json.dumps(record)
        assert PLACEHOLDER in record["content"]
        plain = server.call("update_memory", {"memory_id": memory, "content": f"fixture {STRIPE}", "redact": False})
        assert not plain.is_error
        record = server.call("recall_memory", {"memory_id": memory}).structured_content["results"][0]
        assert STRIPE in record["content"]
        bad = server.call("update_memory", {"memory_id": memory, "content": "x", "redact": "no"})
        assert bad.is_error and "redact" in bad.content[0].text
    finally:
        server.close()
