"""A memory written so that recall's current-state filter hides it says so where it is written.

AutoMem (and the spec) take ``t_valid`` from the timestamp when it is not given, so a memory stored with a
future ``timestamp`` ("the dentist on Friday") is not yet valid, and recall hides it until then; a ``t_invalid``
in the past, a ``t_valid`` not before ``t_invalid`` and ``archived: true`` hide it too. The write stands (the
spec's rule); its answer says why recall will not show the memory: HTTP ``POST /memory`` and ``PATCH`` in
``warnings``, the MCP tools in their text and ``warnings``, the CLI on stderr.
Through a real uvicorn server, the MCP SDK's client over stdio and the CLI as a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.validation import not_current_note

REPO = Path(__file__).resolve().parents[1]
FUTURE = "2031-01-01T00:00:00+00:00"
PAST = "2020-01-01T00:00:00+00:00"


def test_the_note_names_the_reason_and_what_shows_it():
    now = MemoryStore(":memory:", embedder="hash").now()
    assert not_current_note({"t_valid": PAST, "t_invalid": None, "archived": False}, now) is None
    future = not_current_note({"t_valid": FUTURE, "t_invalid": None, "archived": False}, now)
    assert future is not None and "2031-01-01" in future and "t_valid" in future and "history" in future
    expired = not_current_note({"t_valid": PAST, "t_invalid": "2021-01-01T00:00:00+00:00", "archived": False}, now)
    assert expired is not None and "t_invalid" in expired
    never = not_current_note({"t_valid": FUTURE, "t_invalid": "2030-01-01T00:00:00+00:00", "archived": False}, now)
    assert never is not None and "never" in never
    archived = not_current_note({"t_valid": PAST, "t_invalid": None, "archived": True}, now)
    assert archived is not None and "archived" in archived


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, MemoryStore]]:
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    from localmem.http.app import create_app
    from tests.test_http import running

    with MemoryStore(":memory:", embedder="hash") as store, running(create_app(store)) as url, \
            httpx.Client(base_url=url) as client:
        yield client, store


def test_http_post_memory_with_a_future_timestamp_says_recall_hides_it(http):
    client, store = http
    answer = client.post("/memory", json={"content": "Dentist on Friday at nine", "timestamp": FUTURE})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert any("t_valid" in w and "2031-01-01" in w for w in body.get("warnings") or [])
    assert store.recall("dentist")["count"] == 0  # the spec's rule stands: not yet valid
    plain = client.post("/memory", json={"content": "The dentist is on Elm Street"})
    assert "warnings" not in plain.json()


def test_http_patch_that_expires_a_memory_says_so(http):
    client, _ = http
    memory_id = client.post("/memory", json={"content": "Car insurance renews in May"}).json()["memory_id"]
    answer = client.patch(f"/memory/{memory_id}", json={"t_invalid": PAST})
    assert answer.status_code == 200, answer.text
    assert any("t_invalid" in w for w in answer.json().get("warnings") or [])
    assert "warnings" not in client.patch(f"/memory/{memory_id}", json={"t_invalid": None}).json()


def test_the_mcp_tools_say_it(tmp_path):
    pytest.importorskip("mcp")
    from tests.test_mcp import StdioServer

    server = StdioServer(tmp_path / "memory.db")
    try:
        stored = server.call("store_memory", {"content": "Trip to Lisbon in spring", "timestamp": FUTURE})
        assert not stored.is_error, stored.content[0].text
        assert "2031-01-01" in stored.content[0].text
        assert any("t_valid" in w for w in stored.structured_content["warnings"])
        memory_id = stored.structured_content["memory_id"]
        updated = server.call("update_memory", {"memory_id": memory_id, "t_valid": PAST, "t_invalid": PAST})
        assert not updated.is_error, updated.content[0].text
        assert any("never" in w or "t_invalid" in w for w in updated.structured_content["warnings"])
    finally:
        server.close()


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "LOCALMEM_DAEMON": "0"}
    env.pop("LOCALMEM_DB", None)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_the_cli_says_it_on_stderr(tmp_path):
    db = tmp_path / "m.db"
    done = cli(db, "store", "Flight to Oslo booked", "--timestamp", FUTURE)
    assert done.returncode == 0 and "warning:" in done.stderr and "2031-01-01" in done.stderr
    memory_id = done.stdout.strip()
    done = cli(db, "update", memory_id, "--t-valid", "2031-06-01T00:00:00Z", "--t-invalid", "2031-02-01T00:00:00Z")
    assert done.returncode == 0 and "never" in done.stderr
    quiet = cli(db, "store", "Oslo has good coffee")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_batches_say_which_items_recall_hides(http, tmp_path):
    client, _ = http
    answer = client.post("/memory/batch", json={"memories": [
        {"content": "Concert tickets for next year", "timestamp": FUTURE},
        {"content": "The concert hall is downtown"}]})
    assert answer.status_code == 201, answer.text
    notes = answer.json().get("warnings") or []
    assert len(notes) == 1 and notes[0].startswith("Memory at index 0:") and "2031-01-01" in notes[0]

    pytest.importorskip("mcp")
    from tests.test_mcp import StdioServer

    server = StdioServer(tmp_path / "memory.db")
    try:
        stored = server.call("store_memory", {"memories": [{"content": "Lisbon is sunny"},
                                                           {"content": "Lisbon trip next year", "timestamp": FUTURE}]})
        assert not stored.is_error, stored.content[0].text
        assert [w[:13] for w in stored.structured_content["warnings"]] == ["memories[1]: "]
    finally:
        server.close()
