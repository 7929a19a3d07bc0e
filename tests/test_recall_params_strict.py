"""Recall parameters say what is wrong with them: bad enum values, non-numbers and out-of-range
numbers are 400s naming the field and the allowed values (AutoMem falls back to defaults silently);
a limit above the maximum is capped and the answer says so.

Through the Python API, the HTTP server and the CLI, where each was seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localmem import MemoryStore, ValidationError

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from localmem.http.app import create_app
from tests.test_http import running

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as opened:
        for i in range(8):
            opened.store(f"note {i} about the atlas database")
        yield opened


@pytest.mark.parametrize("params, fragments", [
    ({"tag_mode": "sideways"}, ["'tag_mode'", "any, all", "'sideways'"]),
    ({"tag_match": "fuzzy"}, ["'tag_match'", "prefix, exact"]),
    ({"sort": "random"}, ["'sort'", "time_desc"]),
    ({"recency_bias": "max"}, ["'recency_bias'", "off, on, auto"]),
    ({"state_mode": "future"}, ["'state_mode'", "current, history"]),
    ({"limit": "abc"}, ["'limit'", "integer", "'abc'"]),
    ({"limit": 0}, ["'limit'", "at least 1"]),
    ({"limit": -5}, ["'limit'", "at least 1"]),
    ({"limit": 2.5}, ["'limit'", "integer"]),
    ({"relation_limit": "many"}, ["'relation_limit'"]),
    ({"min_score": "abc"}, ["'min_score'", "from 0 to 1"]),
    ({"min_score": 1.5}, ["'min_score'", "from 0 to 1"]),
    ({"min_score": "nan"}, ["'min_score'"]),
    ({"expand_min_strength": "-1"}, ["'expand_min_strength'"]),
    ({"expand_relations": "perhaps"}, ["'expand_relations'", "boolean"]),
    ({"current_only": "maybe"}, ["'current_only'", "boolean"]),
])
def test_bad_values_are_refused_by_name(store, params, fragments):
    with pytest.raises(ValidationError) as caught:
        store.recall("atlas", **params)
    for fragment in fragments:
        assert fragment in caught.value.message


def test_good_values_and_blanks_still_work(store):
    assert store.recall("atlas", tag_mode="ALL", sort=" score ", limit="3", min_score="0",
                        expand_relations="yes", current_only=1)["count"] <= 3
    assert store.recall("atlas", tag_mode="", limit="")["count"] == 5  # blank is the default


def test_a_limit_above_the_maximum_is_capped_and_said(store):
    response = store.recall("atlas", limit=10_000)
    assert response["count"] == 8
    assert any("'limit' 10000 is above the maximum" in w for w in response["warnings"])


def test_http_answers_400_naming_the_field(store):
    with running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        for query, field in (("tag_mode=sideways", "tag_mode"), ("limit=abc", "limit"),
                             ("min_score=abc", "min_score"), ("limit=0", "limit")):
            response = client.get(f"/recall?query=atlas&{query}")
            assert response.status_code == 400, (query, response.text)
            assert response.json()["status"] == "error" and f"'{field}'" in response.json()["message"]
        assert client.get("/recall?query=atlas&limit=2").json()["count"] == 2


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_refuses_bad_limits_and_params(tmp_path: Path):
    db = tmp_path / "m.db"
    assert cli(db, "store", "the atlas database runs postgres 16").returncode == 0
    for args, field in ((["--limit", "0"], "limit"), (["--limit", "-5"], "limit"),
                        (["--param", "min_score=abc"], "min_score"), (["--param", "tag_mode=x"], "tag_mode")):
        result = cli(db, "recall", "atlas", *args)
        assert result.returncode == 2, (args, result.stdout)
        assert f"'{field}'" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("params, fragments", [
    ({"start": "2026-12-31T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, ["'start'", "'end'", "2026-12-31"]),
    ({"time_query": "last week", "start": "2030-01-01T00:00:00Z"}, ["'start'", "time_query 'last week'"]),
    ({"time_query": "today", "end": "2001-01-01T00:00:00Z"}, ["'end'", "time_query 'today'"]),
])
def test_a_reversed_time_window_is_refused_naming_its_bounds(store, params, fragments):
    # It could match nothing: an empty answer would look like "nothing stored then".
    with pytest.raises(ValidationError) as caught:
        store.recall("atlas", **params)
    for fragment in fragments:
        assert fragment in caught.value.message, caught.value.message


def test_a_window_of_one_instant_is_still_a_window(store):
    instant = "2026-01-01T00:00:00Z"
    assert store.recall("atlas", start=instant, end=instant)["time_window"]["start"].startswith("2026-01-01")


def test_http_and_cli_refuse_a_reversed_window(store, tmp_path: Path):
    with running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        response = client.get("/recall?query=atlas&start=2026-12-31&end=2026-01-01")
        assert response.status_code == 400 and "'start'" in response.json()["message"]
    db = tmp_path / "m.db"
    assert cli(db, "store", "the atlas database runs postgres 16").returncode == 0
    result = cli(db, "recall", "atlas", "--start", "2026-12-31", "--end", "2026-01-01")
    assert result.returncode == 2 and "'start'" in result.stderr, result.stderr


def test_a_parameter_and_its_alias_with_different_values_are_refused(store):
    # AutoMem's aliases (order_by for sort, time for time_query): two values for one
    # parameter cannot both be obeyed, and quietly taking one answers another question.
    with pytest.raises(ValidationError) as caught:
        store.recall("atlas", sort="time_asc", order_by="time_desc")
    assert "'sort'" in caught.value.message and "'order_by'" in caught.value.message
    assert store.recall("atlas", sort="time_asc", order_by="time_asc")["sort"] == "time_asc"


def test_http_refuses_a_parameter_given_twice_with_different_values(store):
    with running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        for query, field in (("sort=time_asc&sort=time_desc", "sort"), ("limit=1&limit=2", "limit"),
                             ("sort=time_asc&order_by=time_desc", "order_by"),
                             ("time_query=today&time_query=last%20year", "time_query")):
            response = client.get(f"/recall?query=atlas&{query}")
            assert response.status_code == 400, (query, response.text)
            assert f"'{field}'" in response.json()["message"]
        assert client.get("/recall?query=atlas&limit=2&limit=2").json()["count"] == 2
        assert client.get("/recall?query=atlas&limit=&limit=2").json()["count"] == 2
        by_tag = client.get("/memory/by-tag?tags=x&limit=5&limit=6")
        assert by_tag.status_code == 400 and "'limit'" in by_tag.json()["message"]


def test_priority_ids_are_read_as_memory_ids(store):
    """``priority_ids`` were compared as given: an id in capitals (or without hyphens) matched
    nothing and a value that is no id at all was dropped, both without a word."""
    target = store.recall("atlas", limit=8)["results"][-1]["id"]
    for given in (target, target.upper(), target.replace("-", "")):
        assert store.recall("atlas", limit=3, priority_ids=[given])["results"][0]["id"] == target, given
    with pytest.raises(ValidationError) as caught:
        store.recall("atlas", priority_ids=["not-an-id"])
    assert "'priority_ids'" in caught.value.message and "'not-an-id'" in caught.value.message
