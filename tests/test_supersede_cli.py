"""Supersession from the command line, and honest answers about edges (issue 13, item 4).

On main there was no ``supersede`` command; ``associate NEW OLD --type
INVALIDATED_BY`` (a natural guess) silently hid NEW; the reverse edge made a
cycle that hid both without a word; ``associate`` again overwrote 0.90 with
0.50 silently; and ``stats`` said "0 invalidated or superseded" while recall
said "1 not current hidden".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.cli import main

REPO = Path(__file__).resolve().parents[1]
MISSING_ID = "00000000-0000-4000-8000-000000000000"
OLD_TEXT = "We use MongoDB for the main database."
NEW_TEXT = "We use PostgreSQL for the main database."


def run_cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL")}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, encoding="utf-8", cwd=REPO, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO)}, check=False)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, str, str]:
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        old = store.store(OLD_TEXT, tags=["db"])
        new = store.store(NEW_TEXT, tags=["db"])
    return db, old, new


def test_associate_says_what_a_supersession_edge_means_and_when_it_updates(two):
    db, old, new = two
    helped = ok(run_cli(db, "associate", "--help")).stdout
    helped = " ".join(helped.split())
    assert "ID1 -[INVALIDATED_BY]-> ID2" in helped and "mean ID1 is superseded by ID2" in helped

    # The natural guess, NEW then OLD: the answer says plainly that NEW is the one hidden.
    guess = ok(run_cli(db, "associate", new, old, "--type", "INVALIDATED_BY", "--strength", "0.9"))
    assert f"{new} -[INVALIDATED_BY]-> {old} (strength 0.90, new edge)" in guess.stdout
    assert (f'{new} is now superseded by {old}: recall hides "{NEW_TEXT}" and shows "{OLD_TEXT}" '
            "in its place") in guess.stdout

    again = ok(run_cli(db, "associate", new, old, "--type", "INVALIDATED_BY"))
    assert "(strength 0.50, updated from 0.90)" in again.stdout
    as_json = json.loads(ok(run_cli(db, "associate", new, old, "--type", "INVALIDATED_BY",
                                    "--strength", "0.7", "--json")).stdout)
    assert as_json["updated"] is True and as_json["previous_strength"] == 0.5 and as_json["strength"] == 0.7

    # The reverse edge closes a cycle: said on stderr, and the edge is still written (exit 0).
    cycle = ok(run_cli(db, "associate", old, new, "--type", "INVALIDATED_BY"))
    assert cycle.stderr.startswith(f"warning: this edge closes a supersession cycle ({old} -> {new} -> {old})")
    assert "recall hides them all" in cycle.stderr

    # stats counts what recall hides: both, here.
    stats = json.loads(ok(run_cli(db, "stats", "--json")).stdout)
    assert stats["state_counts"]["superseded"] == 2 and stats["state_counts"]["current"] == 0
    recall = json.loads(ok(run_cli(db, "recall", "main database", "--json")).stdout)
    assert recall["count"] == 0 and recall["state_filter"]["suppressed_count"] == 2
    assert "2 (0 current; recall hides 2: 2 superseded" in ok(run_cli(db, "stats")).stdout


def test_associate_says_what_recall_does_when_the_successor_is_not_current(tmp_path, capsys):
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        first = store.store("first")
        expired = store.store("second", t_invalid="2020-01-01T00:00:00Z")
        third = store.store("third")

    def associate(a: str, b: str) -> str:
        capsys.readouterr()
        assert main(["--db", str(db), "--embedder", "hash", "associate", a, b, "--type", "INVALIDATED_BY"]) == 0
        return capsys.readouterr().out

    assert (f"{expired} is not current itself, nor does it lead to a current memory, so recall does not "
            f"treat {first} as superseded by it") in associate(first, expired)
    associate(expired, third)
    assert f'recall hides "first" and shows {third}, the current end of the chain' in associate(first, expired)


def test_supersede_command(two):
    db, old, existing = two
    made = ok(run_cli(db, "supersede", old, "We use PostgreSQL 16 for the main database.", "--tags", "db",
                      "--importance", "0.9", "--reason", "upgrade"))
    new = made.stdout.strip()
    assert len(new) == 36 and new not in (old, existing)
    assert f"{old} is now superseded by {new}: recall hides \"We use MongoDB" in made.stderr
    with MemoryStore(db, embedder="hash") as store:
        record = store.get(new)
        assert record["tags"] == ["db"] and record["importance"] == 0.9
        assert store.get(old)["metadata"]["supersede_reason"] == "upgrade"
    recall = json.loads(ok(run_cli(db, "recall", "main database", "--json", "--limit", "10")).stdout)
    shown = [r["id"] for r in recall["results"]]
    assert old not in shown and new in shown
    stats = ok(run_cli(db, "stats")).stdout
    assert "3 (2 current; recall hides 1: 1 superseded; 1 of them replaced by a current memory)" in " ".join(stats.split())

    # An existing memory as the replacement, by --id.
    by_id = json.loads(ok(run_cli(db, "supersede", existing, "--id", new, "--relation", "evolved_into",
                                  "--json")).stdout)
    assert by_id == {"status": "success", "memory_id": new, "superseded_memory_id": existing,
                     "relation_type": "EVOLVED_INTO", "association_created": True}


@pytest.mark.parametrize(("args", "code", "message"), [
    (["text", "--id", "NEW"], 2, "give NEW_CONTENT or --id NEW, not both"),
    ([], 2, "give the replacing memory"),
    (["--id", "NEW", "--tags", "x"], 2, "with --id NEW, change NEW with 'localmem update'"),
    (["--id", "MISSING"], 1, f"Memory not found: {MISSING_ID}"),
    (["--id", "OLD"], 2, "A memory cannot supersede itself"),
    (["text", "--relation", "RELATES_TO"], 2, "argument --relation: invalid choice"),
])
def test_supersede_refuses_bad_usage(two, capsys, args, code, message):
    db, old, new = two
    names = {"NEW": new, "MISSING": MISSING_ID, "OLD": old}
    capsys.readouterr()
    assert main(["--db", str(db), "--embedder", "hash", "supersede", old,
                 *[names.get(arg, arg) for arg in args]]) == code
    assert message in capsys.readouterr().err
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(old)["t_invalid"] is None  # nothing changed
        assert store.health()["memory_count"] == 2


def test_stats_counts_agree_with_recall(tmp_path):
    now = datetime(2025, 6, 1, tzinfo=timezone.utc)
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash", clock=lambda: now) as store:
        ids = {k: store.store(f"memory {k} about databases") for k in "abcdefgh"}
        store.update(ids["a"], archived=True)
        store.update(ids["b"], t_invalid="2025-01-01T00:00:00Z")
        store.update(ids["c"], t_valid="2026-01-01T00:00:00Z")
        store.associate(ids["d"], ids["e"], "INVALIDATED_BY")
        store.supersede(ids["f"], ids["g"])
        store.associate(ids["h"], ids["b"], "EVOLVED_INTO")  # its successor is expired: h stays current
        counts = store.state_counts()
        current = store.recall(limit=50)
    # f, which supersede replaced, is superseded (its t_invalid, set by supersede, is not the story)
    assert counts == {"current": 3, "not_current": 5, "archived": 1, "not_yet_valid": 1, "expired": 1,
                      "superseded": 2, "replaced": 2}
    # Recall shows the current ones and hides the rest (archived ones never reach its state filter).
    assert current["count"] == counts["current"]
    assert current["state_filter"]["suppressed_count"] == counts["not_current"] - counts["archived"]


def test_list_states_agree_with_get_and_stats(tmp_path):
    """list_memories(state=...) names each memory's state as get() does, and its counts are stats'
    (chains whose first successor is not current are walked to their current end)."""
    now = datetime(2025, 6, 1, tzinfo=timezone.utc)
    with MemoryStore(tmp_path / "memory.db", embedder="hash", clock=lambda: now) as store:
        ids = {k: store.store(f"memory {k} about databases") for k in "abcdefghijk"}
        store.update(ids["a"], archived=True)
        store.update(ids["b"], t_invalid="2025-01-01T00:00:00Z")
        store.update(ids["c"], t_valid="2026-01-01T00:00:00Z")
        store.associate(ids["d"], ids["e"], "INVALIDATED_BY")
        store.supersede(ids["f"], ids["g"])
        store.associate(ids["h"], ids["b"], "EVOLVED_INTO")  # its successor is expired: h stays current
        store.associate(ids["i"], ids["c"], "EVOLVED_INTO")  # i -> c (not yet valid) -> j (current)
        store.associate(ids["c"], ids["j"], "EVOLVED_INTO")
        store.update(ids["k"], t_invalid="2025-01-01T00:00:00Z")
        store.associate(ids["k"], ids["b"], "INVALIDATED_BY")  # expired, its successor too: expired
        page = store.list_memories(state="all", limit=50)
        listed = {m["id"]: m["state"]["status"] for m in page["memories"]}
        got = {i: store.get(i, with_edges=True)["state"]["status"] for i in ids.values()}
        counts = store.state_counts()
        current = store.list_memories(state="current", limit=50)
    assert listed == got
    assert got[ids["h"]] == "current" and got[ids["i"]] == "superseded" and got[ids["k"]] == "expired"
    assert page["state_counts"] == {k: counts[k] for k in ("current", "superseded", "expired", "archived",
                                                           "not_yet_valid")}
    assert {m["id"] for m in current["memories"]} == {i for i, status in got.items() if status == "current"}
    assert current["total"] == counts["current"]


# -- the same answers through the Python API, HTTP and MCP --------------------------


def test_python_api_reports_updates_and_cycles(memory_store):
    old, new = memory_store.store(OLD_TEXT), memory_store.store(NEW_TEXT)
    first = memory_store.associate(old, new, "INVALIDATED_BY", 0.9)
    assert "updated" not in first and "warnings" not in first  # a new edge: the shape as before
    second = memory_store.associate(old, new, "INVALIDATED_BY", 0.5)
    assert second["updated"] is True and second["previous_strength"] == 0.9
    back = memory_store.associate(new, old, "EVOLVED_INTO")
    assert back["warnings"] and f"({new} -> {old} -> {new})" in back["warnings"][0]
    # supersede() says so too, when its edge closes a cycle
    third = memory_store.store("third")
    memory_store.associate(third, old, "INVALIDATED_BY")
    result = memory_store.supersede(old, third)
    assert any(f"{old} -> {third} -> {old}" in w for w in result["warnings"])


def test_http_and_mcp_report_updates_and_cycles(tmp_path):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    pytest.importorskip("mcp")
    httpx = pytest.importorskip("httpx")
    from localmem.http.app import create_app
    from tests.test_http import running
    from tests.test_mcp import StdioServer

    db = tmp_path / "memory.db"
    store = MemoryStore(db, embedder="hash")
    try:
        old, new = store.store(OLD_TEXT), store.store(NEW_TEXT)
        with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=30) as client:
            edge = {"memory1_id": old, "memory2_id": new, "type": "INVALIDATED_BY"}
            assert client.post("/associate", json={**edge, "strength": 0.9}).status_code == 201
            updated = client.post("/associate", json=edge).json()
            assert updated["updated"] is True and updated["previous_strength"] == 0.9
            assert updated["message"] == f"Association updated between {old} and {new} (strength 0.9 -> 0.5)"
            cycle = client.post("/associate", json={"memory1_id": new, "memory2_id": old,
                                                    "type": "EVOLVED_INTO"}).json()
            assert "closes a supersession cycle" in cycle["warnings"][0]
    finally:
        store.close()
    with MemoryStore(db, embedder="hash") as fresh:
        fresh.dissociate(new, old)
    server = StdioServer(db)
    try:
        args: dict[str, Any] = {"memory1_id": old, "memory2_id": new, "type": "INVALIDATED_BY", "strength": 0.4}
        again = server.call("associate_memories", args)
        assert not again.is_error and again.structured_content["previous_strength"] == 0.5
        text = again.content[0].text
        assert "Association updated successfully!" in text and "(strength 0.4, was 0.5)" in text
        assert f"Meaning: {old} is now superseded by {new}" in text
        cycle = server.call("associate_memories", {"memory1_id": new, "memory2_id": old, "type": "EVOLVED_INTO",
                                                   "strength": 0.5})
        assert not cycle.is_error
        assert "⚠️ Warning: this edge closes a supersession cycle" in cycle.content[0].text
        assert cycle.structured_content["warnings"]
    finally:
        server.close()
