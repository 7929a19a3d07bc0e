"""What the prompt hook injects in the cases issue 40 names, with the real model, through the hook command.

Each case is a store a user could have after a few sessions in project ``orders``
(decisions, preferences, a captured traceback and a code dump) and one prompt,
asked as Claude Code asks it: ``localmem hook UserPromptSubmit`` in a subprocess.
The assertions are about the block the assistant would see.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from tests.hook_helpers import hook_env

pytestmark = pytest.mark.model

OLD_DECISION = "Decision: the orders service stores its data in MongoDB."
NEW_DECISION = "Decision: the orders service moves from MongoDB to PostgreSQL 16; all new tables go there."
PYTEST = "Preference: never use unittest, always pytest (with plain asserts and fixtures) for tests in this repo."
RUFF = "Preference: format and lint Python with ruff (ruff format, ruff check --fix); no black, no isort."
TRACEBACK = """Traceback (most recent call last):
  File "/srv/orders/app/db.py", line 41, in connect
    pool = await asyncpg.create_pool(dsn=settings.database_url, min_size=2)
  File "/usr/lib/python3.12/site-packages/asyncpg/pool.py", line 403, in _async__init__
    await self._initialize()
ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432)"""
CODE_DUMP = """Here is the current db module:
```python
import asyncpg
from .settings import settings

async def connect():
    return await asyncpg.create_pool(dsn=settings.database_url, min_size=2, max_size=10)

async def fetch_order(pool, order_id):
    async with pool.acquire() as conn:
        return await conn.fetchrow("SELECT * FROM orders WHERE id = $1", order_id)
```"""
OTHER = [
    "The CI pipeline runs on GitHub Actions with a matrix of Python 3.11 and 3.12.",
    "Releases are tagged vX.Y.Z and published to the internal package index on Fridays.",
    "The orders API exposes /orders, /orders/{id} and /orders/{id}/refunds.",
    "ok, thanks",
    "Sure, go ahead.",
]


def orders_store(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="auto") as store:
        if not store.health()["embedder"]["available"]:
            pytest.skip(f"MiniLM is not available: {store.embedder_error}")
        tags = ["project:orders"]
        old = store.store(OLD_DECISION, tags=tags, type="Decision", timestamp="2026-10-01T10:00:00Z")
        store.supersede(old, NEW_DECISION, tags=tags, type="Decision")
        for text in (PYTEST, RUFF):
            store.store(text, tags=tags, type="Preference")
        for text in (TRACEBACK, CODE_DUMP, *OTHER):
            store.store(text, tags=tags)
    (tmp_path / "orders" / ".git").mkdir(parents=True)
    return db


def ask(db: Path, tmp_path: Path, prompt: str, session: str) -> tuple[str | None, str]:
    payload = {"session_id": session, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path / "orders"),
               "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    proc = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "auto", "hook",
                           "UserPromptSubmit", "--no-forward", "-v"], input=json.dumps(payload),
                          capture_output=True, text=True, encoding="utf-8", env=hook_env(), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None), proc.stderr


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("orders")
    return orders_store(tmp), tmp


def test_the_current_decision_is_injected_not_the_traceback_or_the_code(store_dir):
    db, tmp = store_dir
    block, err = ask(db, tmp, "which database does the orders service use?", "s-db")
    assert block is not None, err
    assert "PostgreSQL 16" in block, err
    assert OLD_DECISION not in block
    assert "Traceback" not in block and "asyncpg.create_pool" not in block, block


def test_a_unittest_request_gets_the_pytest_preference(store_dir):
    db, tmp = store_dir
    block, err = ask(db, tmp, "add tests for the parser using unittest", "s-unittest")
    assert block is not None and "always pytest" in block, err


def test_a_formatting_question_gets_the_ruff_preference(store_dir):
    db, tmp = store_dir
    block, err = ask(db, tmp, "how should I format code here?", "s-format")
    assert block is not None and "ruff" in block, err


def test_a_bare_word_does_not_pull_in_an_unrelated_preference(store_dir):
    db, tmp = store_dir
    block, err = ask(db, tmp, "config", "s-config")
    assert block is None or "pytest" not in block, err


def test_verbose_explains_each_candidate_with_the_real_model(store_dir):
    db, tmp = store_dir
    _, err = ask(db, tmp, "which database does the orders service use?", "s-explain")
    assert "floor" in err and "the rest's median" in err
    assert "relevance" in err and ("kept" in err or "nothing stands out" in err)
