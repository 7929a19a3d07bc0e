"""``get`` shows a memory's state and its edges (issue 13, item 4).

On main ``localmem get`` showed neither edges nor "superseded by": a memory
recall hid looked exactly like a current one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from localmem import MemoryStore
from localmem.storage.records import RECORD_FIELDS

REPO = Path(__file__).resolve().parents[1]


def run_cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL")}
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                            capture_output=True, text=True, encoding="utf-8", cwd=REPO, timeout=120,
                            env={**env, "PYTHONPATH": str(REPO)}, check=False)
    assert result.returncode == 0, result.stderr
    return result


def test_python_get_with_edges_is_opt_in(memory_store):
    old = memory_store.store("We use MongoDB")
    other = memory_store.store("The ops team runs the database")
    new = memory_store.supersede(old, "We use PostgreSQL", tags=["db"])["memory_id"]
    memory_store.associate(other, old, "RELATES_TO", 0.3)
    plain = memory_store.get(old)
    assert tuple(plain) == RECORD_FIELDS  # the contract's record, unchanged
    detailed = memory_store.get(old, with_edges=True)
    assert {k: detailed[k] for k in RECORD_FIELDS} == plain
    assert set(detailed) - set(RECORD_FIELDS) == {"state", "edges"}
    # supersede set its t_invalid too, but what it is, is superseded
    assert detailed["state"] == {"status": "superseded", "current": False, "superseded_by": new,
                                 "relation_type": "INVALIDATED_BY"}
    [out] = detailed["edges"]["outgoing"]
    assert (out["memory_id"], out["type"], out["strength"], out["summary"]) == (
        new, "INVALIDATED_BY", 0.9, "We use PostgreSQL")
    [incoming] = detailed["edges"]["incoming"]
    assert (incoming["memory_id"], incoming["type"], incoming["strength"]) == (other, "RELATES_TO", 0.3)
    assert memory_store.get(new, with_edges=True)["state"] == {"status": "current", "current": True}


def test_cli_get_shows_state_and_edges(tmp_path):
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        old = store.store("We use MongoDB for the main database.")
        new = store.store("We use PostgreSQL for the main database.")
        store.associate(old, new, "INVALIDATED_BY", 0.9)  # an edge alone supersedes (no t_invalid)
    human = run_cli(db, "get", old).stdout
    assert (f"state: superseded by {new} (INVALIDATED_BY) - recall hides it (--state-mode history shows it)"
            in human)
    assert "outgoing edges: 1" in human
    assert f"  -[INVALIDATED_BY]-> {new} (strength 0.90)  We use PostgreSQL for the main database." in human
    assert "incoming edges: none" in human

    shown = run_cli(db, "get", new).stdout
    assert "state: current\n" in shown
    assert f"  <-[INVALIDATED_BY]- {old} (strength 0.90)  We use MongoDB for the main database." in shown

    record = json.loads(run_cli(db, "get", old, "--json").stdout)
    assert record["id"] == old and record["content"] == "We use MongoDB for the main database."
    assert record["state"]["status"] == "superseded" and record["state"]["superseded_by"] == new
    assert [e["memory_id"] for e in record["edges"]["outgoing"]] == [new]
    assert record["edges"]["incoming"] == []
