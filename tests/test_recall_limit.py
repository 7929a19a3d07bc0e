"""``limit`` counts results after every filter: the current-state filter runs before the cut,
so N results come back whenever N current memories exist (issue 13, item 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore

REPO = Path(__file__).resolve().parents[1]
QUERY = "which postgres version does atlas use"
TOKEN = "limit-test-token-0123456789"


def atlas(store: MemoryStore) -> dict[str, str]:
    """A superseded fact that ranks first for QUERY, its replacement, and five current others."""
    old = store.store("Atlas uses Postgres 14 for its main database", tags=["atlas"])
    new = store.supersede(old, "Atlas upgraded to Postgres 16 for its main database",
                          tags=["atlas"])["memory_id"]
    for text in ["Atlas deploys on Fridays", "Postgres backups run nightly", "Atlas team prefers pytest",
                 "Billing service uses MySQL", "The atlas dashboard lives in Grafana"]:
        store.store(text, tags=["atlas"])
    return {"old": old, "new": new}


def ids(response):
    return [r["id"] for r in response["results"]]


def test_limit_n_gives_n_with_a_superseded_memory_in_the_top(memory_store):
    made = atlas(memory_store)
    for limit in (1, 2, 3, 5):
        # Without the adaptive floor, which may cut weak matches before the limit.
        response = memory_store.recall(QUERY, limit=limit, state_debug=True, adaptive_floor=False)
        assert response["count"] == len(response["results"]) == limit, limit
        assert made["old"] not in ids(response) and ids(response)[0] == made["new"]
        state = response["state_filter"]
        # Honest counts: the one hidden memory, and its replacement shown in its place.
        assert (state["suppressed_count"], state["replacement_count"]) == (1, 1)
        assert state["suppressed"][0]["id"] == made["old"]
        assert state["replacements"] == [{"id": made["new"], "replaces_id": made["old"],
                                          "relation_type": "INVALIDATED_BY"}]
    # Six current memories exist: asking for more gives all six, not seven.
    assert memory_store.recall(QUERY, limit=10, adaptive_floor=False)["count"] == 6


def test_no_query_limit_counts_current_memories(memory_store_factory):
    store = memory_store_factory(embedder="none")
    old = store.store("Atlas uses Postgres 14", importance=0.9)
    new = store.supersede(old, "Atlas upgraded to Postgres 16", importance=0.85)["memory_id"]
    for n, text in enumerate(["Atlas deploys on Fridays", "Postgres backups run nightly",
                              "Atlas team prefers pytest"]):
        store.store(text, importance=0.8 - n / 10)
    response = store.recall(limit=3, adaptive_floor=False)
    assert response["count"] == 3 and ids(response)[0] == new
    assert response["state_filter"]["suppressed_count"] == 1


def test_hidden_memories_filling_the_page_are_asked_past(memory_store_factory):
    # The three most important memories in scope are superseded by memories outside it,
    # so nothing takes their place: the channel must be asked for more.
    store = memory_store_factory(embedder="none")
    for n in range(3):
        old = store.store(f"old project fact {n}", tags=["proj"], importance=0.9)
        store.supersede(old, f"moved fact {n}", tags=["elsewhere"])
    current = [store.store(f"current project fact {n}", tags=["proj"], importance=0.5 - n / 10)
               for n in range(3)]
    response = store.recall(tags=["proj"], limit=3, adaptive_floor=False)
    assert ids(response) == current
    assert response["state_filter"] == {"current_only": True, "suppressed_count": 3,
                                        "replacement_count": 0}
    # A superseded memory that ranks below the cut was never going to be shown: not counted.
    first = store.recall(tags=["proj"], limit=1, adaptive_floor=False)
    assert first["state_filter"]["suppressed_count"] == 3  # all three ranked above the one shown
    low = store.store("old low fact", tags=["proj"], importance=0.01)
    store.supersede(low, "moved low fact", tags=["elsewhere"])
    assert store.recall(tags=["proj"], limit=3, adaptive_floor=False)["state_filter"]["suppressed_count"] == 3


def test_multi_query_and_history_mode(memory_store):
    made = atlas(memory_store)
    response = memory_store.recall(queries=[QUERY, "atlas postgres version"], limit=4, adaptive_floor=False)
    assert response["count"] == 4 and made["old"] not in ids(response)
    history = memory_store.recall(QUERY, limit=3, state_mode="history")
    assert history["count"] == 3 and made["old"] in ids(history) and "state_filter" not in history


# -- through the interfaces ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("limit") / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        atlas(store)
    return path


def test_cli_limit(db):
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8", "LOCALMEM_DAEMON": "0"}
    for limit in ("2", "3", "5"):
        run = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash",
                              "recall", QUERY, "--limit", limit, "--param", "adaptive_floor=false",
                              "--json"],
                             capture_output=True, text=True, env=env, timeout=120, check=False)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["count"] == int(limit)
    table = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash",
                            "recall", "--limit", "3", "--param", "adaptive_floor=false"], capture_output=True, text=True, env=env,
                           timeout=120, check=False)
    assert table.returncode == 0 and "(3 results;" in table.stdout


def test_http_limit(db):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(db, embedder="hash") as store, running(create_app(store, token=TOKEN)) as url, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        for limit in (2, 3, 5):
            body = http.get("/recall", params={"query": QUERY, "limit": limit,
                                                     "adaptive_floor": "false"}).json()
            assert body["count"] == limit and body["state_filter"]["suppressed_count"] == 1


def test_mcp_limit(db):
    pytest.importorskip("mcp")
    from test_mcp import StdioServer

    server = StdioServer(db)
    try:
        for limit in (2, 3, 5):
            result = server.call("recall_memory", {"query": QUERY, "limit": limit,
                                                          "adaptive_floor": False})
            assert not result.is_error
            assert result.structured_content["count"] == limit
            assert len(result.structured_content["results"]) == limit
    finally:
        server.close()


def test_a_supersession_cycle_stays_hidden(memory_store_factory):
    # Filtering the whole pool must not move one memory of a cycle up in place of the other.
    store = memory_store_factory(embedder="none")
    first = store.store("The main database is Postgres")
    second = store.store("The main database is MySQL")
    store.associate(first, second, type="INVALIDATED_BY")
    store.associate(second, first, type="INVALIDATED_BY")
    response = store.recall("main database", limit=5)
    assert response["results"] == [] and response["state_filter"]["suppressed_count"] == 2
