"""Recall parameters that do nothing in the combination given say so: a parameter taken and not
used, or dropped in favour of another, adds a line to the answer's ``warnings`` naming it and why
(the CLI prints them on stderr, the MCP tool's text as ``Warning:`` lines). The behaviour itself
stays the spec's (automem-recall.md, automem-behaviour.md §1.1); only the silence goes.

Through the Python API for each parameter, and through a real HTTP server, the MCP SDK's client
and the CLI as a subprocess for the surfaces.
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

NOW = "2025-06-01T00:00:00+00:00"
REPO = Path(__file__).resolve().parents[1]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO), "NO_COLOR": "1", "LOCALMEM_DAEMON": "0"}
    env.pop("LOCALMEM_DB", None)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as opened:
        first = opened.store("The atlas database runs on PostgreSQL", tags=["project:atlas", "db"],
                             timestamp="2025-01-01T00:00:00Z", context="work")
        second = opened.store("Atlas deploys happen on Fridays", tags=["project:atlas"],
                              timestamp="2025-02-01T00:00:00Z")
        opened.store("The beta service uses Redis", tags=["project:beta"], timestamp="2025-03-01T00:00:00Z")
        opened.associate(first, second, "RELATES_TO", 0.8)
        yield opened


def warnings_of(store: MemoryStore, **params: Any) -> list[str]:
    return store.recall(now=NOW, **params).get("warnings") or []


def said(store: MemoryStore, fragment: str, **params: Any) -> bool:
    return any(fragment in w for w in warnings_of(store, **params))


# -- sort: score asked for, time order given (the spec's switch when a window has no query) ------------


def test_an_explicit_score_sort_switched_to_time_order_says_so(store):
    response = store.recall(sort="score", time_query="last year", now=NOW)
    assert response["sort"] == "time_desc"  # the spec's rule stands
    assert any("'sort'" in w and "time_desc" in w for w in response.get("warnings") or [])


def test_the_default_sort_switching_says_nothing(store):
    assert not warnings_of(store, time_query="last year")
    assert not warnings_of(store, query="atlas", sort="score", time_query="last year")


# -- state_mode, current_only, state_debug ---------------------------------------------------------------


def test_current_only_winning_over_a_different_state_mode_says_so(store):
    response = store.recall(query="atlas", state_mode="history", current_only=True, now=NOW)
    assert response["state_mode"] == "current"  # the spec: current_only wins
    assert any("'state_mode'" in w and "'current_only'" in w for w in response.get("warnings") or [])
    assert said(store, "'state_mode'", query="atlas", state_mode="current", current_only=False)


def test_agreeing_state_mode_and_current_only_say_nothing(store):
    assert not warnings_of(store, query="atlas", state_mode="history", current_only=False)
    assert not warnings_of(store, query="atlas", current_only=False)


def test_state_debug_in_history_mode_says_it_has_nothing_to_report(store):
    response = store.recall(query="atlas", state_mode="history", state_debug=True, now=NOW)
    assert "state_filter" not in response  # the spec: a history answer has no state_filter
    assert any("'state_debug'" in w for w in response.get("warnings") or [])
    assert not warnings_of(store, query="atlas", state_debug=True)


# -- the expansion options without the expansion they shape ---------------------------------------------


@pytest.mark.parametrize("name, value", [
    ("relation_limit", 2), ("expand_min_strength", 0.5), ("expand_min_importance", 0.3),
    ("expansion_limit", 3), ("expand_respect_tags", True),
])
def test_an_expansion_option_without_expansion_says_it_was_not_used(store, name, value):
    assert said(store, f"'{name}'", query="atlas", **{name: value})


@pytest.mark.parametrize("name, value", [("relation_limit", 2), ("expand_min_strength", 0.5),
                                         ("expand_min_importance", 0.3)])
def test_a_relation_option_with_only_entity_expansion_says_it_was_not_used(store, name, value):
    assert said(store, f"'{name}'", query="atlas", expand_entities=True, **{name: value})


def test_expansion_options_with_their_expansion_say_nothing(store):
    assert not warnings_of(store, query="atlas", expand_relations=True, relation_limit=2, expansion_limit=3,
                           expand_min_strength=0.5, expand_min_importance=0.3, tags=["project"],
                           expand_respect_tags=True)
    assert not warnings_of(store, query="atlas", expand_entities=True, expansion_limit=3)
    assert not warnings_of(store, query="atlas", expand_respect_tags=False)


def test_respecting_tags_without_tags_says_there_are_none(store):
    assert said(store, "'expand_respect_tags'", query="atlas", expand_relations=True, expand_respect_tags=True)


# -- query beside queries, per_query_limit, auto_decompose -----------------------------------------------


def test_a_query_beside_queries_says_it_was_not_searched(store):
    response = store.recall(query="friday", queries=["atlas", "redis"], now=NOW)
    assert response["queries"] == ["atlas", "redis"]  # the spec: queries run, the query does not
    assert any("'query'" in w and "'queries'" in w for w in response.get("warnings") or [])


def test_per_query_limit_without_queries_says_it_was_not_used(store):
    assert said(store, "'per_query_limit'", query="atlas", per_query_limit=2)
    assert not warnings_of(store, queries=["atlas", "redis"], per_query_limit=2)
    assert not warnings_of(store, query="atlas deploys Fridays", auto_decompose=True, per_query_limit=2)


def test_auto_decompose_beside_queries_or_without_a_query_says_it_was_not_used(store):
    assert said(store, "'auto_decompose'", queries=["atlas", "redis"], auto_decompose=True)
    assert said(store, "'auto_decompose'", auto_decompose=True)
    assert not warnings_of(store, query="atlas deploys Fridays", auto_decompose=True)


# -- scope_fallback -------------------------------------------------------------------------------------


def test_scope_fallback_without_tags_or_a_query_says_it_was_not_used(store):
    assert said(store, "'scope_fallback'", query="atlas", scope_fallback=True)
    assert said(store, "'scope_fallback'", tags=["project:beta"], scope_fallback=True)
    assert not warnings_of(store, query="redis", tags=["project:beta"], scope_fallback=True)


def test_scope_fallback_without_a_vector_channel_says_it_was_not_used():
    with MemoryStore(":memory:", embedder="none") as plain:
        plain.store("The beta service uses Redis", tags=["project:beta"])
        plain.store("Atlas uses PostgreSQL", tags=["project:atlas"])
        response = plain.recall("redis", tags=["project:beta"], scope_fallback=True, limit=5)
        assert "scope_fallback" not in response
        assert any("'scope_fallback'" in w for w in response.get("warnings") or [])


# -- score-only options on a time-ordered answer ---------------------------------------------------------


@pytest.mark.parametrize("sort", ["time_desc", "updated_asc"])
def test_recency_bias_on_a_time_sort_says_it_was_not_used(store, sort):
    response = store.recall(query="atlas", recency_bias="on", sort=sort, now=NOW)
    assert "recency_bias" not in response
    assert any("'recency_bias'" in w for w in response.get("warnings") or [])


def test_recency_bias_off_or_on_a_score_sort_says_nothing(store):
    assert not warnings_of(store, query="atlas", recency_bias="off", sort="time_desc")
    assert not warnings_of(store, query="atlas", recency_bias="on")


def test_an_adaptive_floor_asked_for_on_a_time_sort_says_it_was_not_used(store):
    assert said(store, "'adaptive_floor'", query="atlas", adaptive_floor=True, sort="time_asc")
    assert not warnings_of(store, query="atlas", sort="time_asc")  # the default floor: nothing to say
    assert not warnings_of(store, query="atlas", adaptive_floor=False, sort="time_asc")


# -- context hints that name nothing recall knows ----------------------------------------------------------


def test_a_language_recall_does_not_know_says_it_boosts_nothing(store):
    assert said(store, "'language'", query="atlas", language="klingon")
    assert not warnings_of(store, query="atlas", language="Py")


def test_an_active_path_without_a_known_extension_says_it_boosts_nothing(store):
    assert said(store, "'active_path'", query="atlas", active_path="notes/todo.xyz")
    assert not warnings_of(store, query="atlas", active_path="src/auth.ts")


def test_an_active_path_overruled_by_language_says_so(store):
    assert said(store, "'active_path'", query="atlas", language="python", active_path="src/auth.ts")
    assert not warnings_of(store, query="atlas", language="typescript", active_path="src/auth.ts")


def test_context_types_read_as_memory_types_and_an_unknown_one_is_said(store):
    response = store.recall(query="atlas", context_types=["meeting_notes", "decision"], now=NOW)
    assert set(response["context_priority"]["priority_types"]) == {"Context", "Decision"}
    assert not response.get("warnings")
    assert said(store, "'context_types'", query="atlas", context_types=["Bogus"])


# -- tag_mode and tag_match without tags -----------------------------------------------------------------


def test_tag_mode_all_without_tags_says_it_was_not_used(store):
    assert said(store, "'tag_mode'", query="atlas", tag_mode="all")
    assert not warnings_of(store, query="atlas", tag_mode="any")
    assert not warnings_of(store, query="atlas", tags=["project", "db"], tag_mode="all")


def test_exact_tag_match_beside_exclude_tags_alone_says_exclusion_stays_by_prefix(store):
    response = store.recall(query="atlas", exclude_tags=["project"], tag_match="exact", now=NOW)
    assert response["count"] == 0  # the spec: exclude_tags match by prefix whatever tag_match says
    assert any("'tag_match'" in w and "exclude_tags" in w for w in response.get("warnings") or [])
    assert not warnings_of(store, query="atlas", tags=["db"], tag_match="exact")


# -- context: a ranking hint, though it can look like the name of a context (namespace) --------------------


def test_a_context_hint_that_names_a_stored_context_says_it_does_not_filter(store):
    response = store.recall(query="atlas", context="work", now=NOW)
    contexts = {r["memory"]["context"] for r in response["results"]}
    assert contexts == {"work", "default"}  # memories of every context: the spec's hint, not a filter
    assert any("'context'" in w and "not a filter" in w for w in response.get("warnings") or [])
    assert not warnings_of(store, query="atlas", context="programming task")


def test_the_cli_recall_context_option_is_described_as_the_hint_it_is(tmp_path):
    db = tmp_path / "m.db"
    assert cli(db, "store", "--context", "work", "The atlas database runs on PostgreSQL").returncode == 0
    assert cli(db, "store", "--context", "home", "Atlas the cat eats at six").returncode == 0
    done = cli(db, "recall", "atlas", "--context", "work")
    assert done.returncode == 0 and "eats at six" in done.stdout
    assert "warning: 'context'" in done.stderr and "not a filter" in done.stderr
    help_text = " ".join(cli(db, "recall", "--help").stdout.split())
    assert "namespace" not in help_text.split("--context NAME", 1)[1].split("--", 1)[0]


# -- every surface says them -----------------------------------------------------------------------------


def test_http_get_recall_carries_the_notes(store):
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    from localmem.http.app import create_app
    from tests.test_http import running

    with running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        response = client.get("/recall?query=atlas&relation_limit=2&state_mode=history&current_only=true")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["state_mode"] == "current"
        notes = body.get("warnings") or []
        assert any("'relation_limit'" in w for w in notes) and any("'state_mode'" in w for w in notes)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("mcp")
    from tests.test_mcp import StdioServer

    server = StdioServer(tmp_path_factory.mktemp("mcp") / "memory.db")
    try:
        yield server
    finally:
        server.close()


def test_the_mcp_tool_says_them_in_its_text_and_structured_content(mcp_server):
    assert not mcp_server.call("store_memory", {"content": "Atlas deploys happen on Fridays"}).is_error
    result = mcp_server.call("recall_memory", {"query": "atlas", "tag_mode": "all", "per_query_limit": 2})
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert "Warning: 'tag_mode'" in text and "Warning: 'per_query_limit'" in text
    assert any("'tag_mode'" in w for w in result.structured_content["warnings"])


def test_the_cli_says_them_on_stderr(tmp_path):
    db = tmp_path / "m.db"
    assert cli(db, "store", "Atlas deploys happen on Fridays").returncode == 0
    done = cli(db, "recall", "atlas", "--state-mode", "history", "--param", "state_debug=true")
    assert done.returncode == 0 and "Fridays" in done.stdout
    assert "warning: 'state_debug'" in done.stderr


# -- priority_ids naming no memory -------------------------------------------------------------------------


def test_a_priority_id_that_names_no_memory_is_said(store):
    missing = "00000000-0000-4000-8000-000000000000"
    notes = warnings_of(store, query="atlas", priority_ids=[missing])
    assert any("'priority_ids'" in w and missing in w for w in notes)
    known = store.recall("redis", limit=1, now=NOW)["results"][0]["id"]
    assert not warnings_of(store, query="atlas", priority_ids=[known])


# -- time_query beside start and end ----------------------------------------------------------------------


def test_start_and_end_beside_a_time_query_say_which_bounds_they_replaced(store):
    both = warnings_of(store, query="atlas", time_query="last year", start="2024-06-01T00:00:00Z",
                       end="2024-07-01T00:00:00Z")
    assert any("'time_query'" in w and "was not used" in w for w in both)
    one = warnings_of(store, query="atlas", time_query="last year", start="2024-06-01T00:00:00Z")
    assert any("'start'" in w and "'time_query'" in w for w in one)
    assert not warnings_of(store, query="atlas", time_query="last year")
    assert not warnings_of(store, query="atlas", start="2024-06-01T00:00:00Z", end="2024-07-01T00:00:00Z")


# -- Kagura's recall: filters.tag_mode without filters.tags -----------------------------------------------


def test_recall_v1_tag_mode_without_tags_says_it_was_not_used(store):
    answer = store.recall_v1("atlas", filters={"tag_mode": "all"})
    assert answer["results"]
    assert any("filters.tag_mode" in w for w in answer.get("warnings") or [])
    assert "warnings" not in store.recall_v1("atlas", filters={"tag_mode": "all", "tags": ["project"]})
    assert "warnings" not in store.recall_v1("atlas")


# -- tags that exclude_tags rule out ----------------------------------------------------------------------


def test_tags_every_one_of_which_is_excluded_say_nothing_can_match(store):
    response = store.recall(query="atlas", tags=["project:atlas"], exclude_tags=["project"], now=NOW)
    assert response["count"] == 0
    assert any("'exclude_tags'" in w and "'tags'" in w for w in response.get("warnings") or [])
    assert said(store, "'exclude_tags'", query="atlas", tags=["db"], tag_match="exact", exclude_tags=["DB"])
    assert not warnings_of(store, query="atlas", tags=["project"], exclude_tags=["project:beta"])
    assert not warnings_of(store, query="atlas", tags=["project:atlas", "db"], exclude_tags=["db"])
    assert said(store, "tag_mode is all", query="atlas", tags=["project:atlas", "db"], tag_mode="all",
                exclude_tags=["db"])


# -- the CLI: an option and a --param for one parameter ------------------------------------------------------


def test_the_cli_refuses_an_option_and_a_param_naming_one_parameter(tmp_path):
    db = tmp_path / "m.db"
    assert cli(db, "store", "Atlas deploys happen on Fridays", "--tags", "project:atlas").returncode == 0
    for args in (("--tags", "project", "--param", "tags=db"), ("--limit", "3", "--param", "limit=1"),
                 ("--sort", "score", "--param", "order_by=time_asc"), ("--param", "query=redis")):
        done = cli(db, "recall", "atlas", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "--param" in done.stderr, done.stderr
    assert cli(db, "recall", "atlas", "--param", "min_score=0.1").returncode == 0


# -- the MCP tool's enumeration mode reads tags as ranked mode does, and says so ---------------------------------


def test_mcp_enumeration_says_how_it_read_a_tag_with_a_space(mcp_server):
    assert not mcp_server.call("store_memory", {"content": "Ranked and listed alike",
                                                "tags": ["enum-a", "enum-b"]}).is_error
    listed = mcp_server.call("recall_memory", {"tags": ["enum-a enum-b"], "exhaustive": True})
    assert not listed.is_error, listed.content[0].text
    assert listed.structured_content["count"] == 1
    assert "Warning: 'tags'" in listed.content[0].text
    assert any("'enum-a', 'enum-b'" in w for w in listed.structured_content["warnings"])


# -- strict_time without a time_query ----------------------------------------------------------------------


def test_strict_time_without_a_time_query_says_it_was_not_used(store):
    assert said(store, "'strict_time'", query="atlas", strict_time=True)
    assert said(store, "'strict_time'", query="atlas", strict_time=True, start="2024-01-01T00:00:00Z")
    assert not warnings_of(store, query="atlas", strict_time=True, time_query="last year")
    assert not warnings_of(store, query="atlas", strict_time=False)
