"""recall_v1's fast paths give the answers of the statements they stand in for.

- related_tags from each tag's kept facts (kagura/hints.py) equals
  kagura_related_tags.sql at any clock, and follows writes;
- the semantic arm of a tag- or context-scoped search by the code kNN among the
  index's memories (store-wide when they are most of the store), and the keyword
  arm ranked from the index with the scope checked on the hits (kagura/search.py),
  equal the exact scoped statements,
  including when the scope turns most hits away (the fallback);
- near-duplicates are looked up among memories holding two of a result's three
  rarest words (kagura/duplicates.py).
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from localmem import Config
from localmem.kagura import hints, search
from localmem.kagura.request import Filters
from localmem.kagura.scope import SearchScope
from localmem.pytest_plugin import FIXED_NOW


def day(n: int) -> str:
    return (FIXED_NOW - timedelta(days=60) + timedelta(days=n)).isoformat()


class TableEmbedder:
    name = "table"
    dimensions = 4

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table.get(text, [0.0, 0.0, 0.0, 1.0]) for text in texts]


def unit(degrees: float) -> list[float]:
    a = math.radians(degrees)
    return [math.cos(a), math.sin(a), 0.0, 0.0]


def without_time(response: dict[str, Any]) -> dict[str, Any]:
    response.pop("query_time_ms", None)
    return response


def statement_tags(store: Any, tags: list[str], now: str) -> dict[str, dict[str, Any]]:
    """kagura_related_tags.sql's rows for ``tags`` at ``now`` (the reference)."""
    scope = SearchScope(contexts=None, filters=Filters(), excluded_types=tuple(store.config.excluded_types))
    return {r["tag"]: r for r in hints._tag_rows(store._backend, scope, tags, len(tags), now)}


def test_related_tags_sample_at_any_clock_and_after_a_write(memory_store_factory):
    store = memory_store_factory(config=Config(track_access=False))
    store.store("ops restart runbook for the queue", tags=["ops"], timestamp=day(1), updated_at=day(1))
    lasting = store.store("ops handbook", tags=["ops"], timestamp=day(5), updated_at=day(5))
    store.store("ops pager rota until day 20", tags=["ops"], timestamp=day(10), updated_at=day(10),
                t_invalid=day(20))
    store.store("ops freeze until day 30", tags=["ops"], timestamp=day(11), updated_at=day(11),
                t_invalid=day(30))
    store.store("ops incident until day 15", tags=["ops", "Incidents"], timestamp=day(12),
                updated_at=day(12), t_invalid=day(15))
    samples = {}
    for clock in (13, 16, 25, 35):
        now = day(clock)
        response = store.recall_v1("restart runbook queue", k=3, now=now)
        got = {t["tag"]: t for t in response["related_tags"]}
        expected = statement_tags(store, ["ops"], now)["ops"]
        assert got["ops"] == {"tag": "ops", "count": 5, "sample_summary": expected["sample_summary"],
                              "last_used_at": expected["last_used_at"]}
        samples[clock] = got["ops"]["sample_summary"]
    assert samples[13].startswith("ops incident") and samples[16].startswith("ops freeze")
    assert samples[25].startswith("ops freeze") and samples[35] == "ops handbook"
    assert lasting
    # A write changes the file: the kept facts are read again.
    store.store("ops checklist", tags=["ops"], timestamp=day(34), updated_at=day(34))
    response = store.recall_v1("restart runbook queue", k=3, now=day(35))
    ops = {t["tag"]: t for t in response["related_tags"]}["ops"]
    assert ops["count"] == 6 and ops["sample_summary"] == "ops checklist"
    assert ops == {**statement_tags(store, ["ops"], day(35))["ops"], "tag": "ops"}


def test_related_tags_with_every_memory_of_a_tag_expired_names_the_newest(memory_store_factory):
    store = memory_store_factory(config=Config(track_access=False))
    store.store("deploy window notes", tags=["deploy"], timestamp=day(1), updated_at=day(1))
    store.store("deploy freeze", tags=["freeze"], timestamp=day(2), updated_at=day(2), t_invalid=day(3))
    store.store("older freeze", tags=["freeze"], timestamp=day(1), updated_at=day(1), t_invalid=day(9))
    response = store.recall_v1("deploy window notes", k=1, now=day(4))
    # The result's own tag only; "freeze" is not among the results' tags.
    assert [t["tag"] for t in response["related_tags"]] == ["deploy"]
    for now in (day(4), day(10)):
        facts = hints._tag_facts(store._backend, None, ["freeze"])["freeze"]
        scope = SearchScope(contexts=None, filters=Filters(), excluded_types=())
        row = hints._tag_row(store._backend, scope, "freeze", facts, now)
        assert row == {**statement_tags(store, ["freeze"], now)["freeze"]}
    assert hints._tag_row(store._backend, scope, "freeze", facts, day(10))["sample_summary"] == "deploy freeze"
    assert hints._tag_row(store._backend, scope, "freeze", facts, day(4))["sample_summary"] == "older freeze"


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


@pytest.fixture
def varied(memory_store_factory):
    """240 memories in two contexts, three tag families, some archived, some another type."""
    store = memory_store_factory(config=Config(track_access=False))
    items = []
    for i in range(240):
        words = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 4 + i % 5))
        items.append({"content": f"note {i} {words}", "context": "work" if i % 3 else "home",
                      "tags": [f"team:{'abc'[i % 3]}", f"topic:{i % 7}"], "timestamp": day(i % 50),
                      "type": "Context" if i % 11 == 0 else "Memory"})
    ids = store.store_many(items)
    for memory_id in ids[::9]:
        store.update(memory_id, archived=True)
    return store


REQUESTS = [
    {"query": "alpha bravo"},
    {"query": "charlie", "filters": {"tags": ["team:a"]}},
    {"query": "delta echo golf", "filters": {"tags": ["team"]}},
    {"query": "hotel", "filters": {"tags": ["team:b", "topic:3"], "tag_mode": "all"}},
    {"query": "india juliet", "filters": {"context_id": "home"}},
    {"query": "alpha", "filters": {"context_id": "work", "tags": ["topic:2"]}},
    {"query": "bravo delta", "search_mode": "keyword", "filters": {"tags": ["team:c"]}},
    {"query": "echo", "search_mode": "semantic", "filters": {"context_id": "work"}},
    {"query": "foxtrot", "filters": {"type": "context"}},
    # "work" holds two thirds of the store: searched store-wide, the scope checked on the hits
    {"query": "golf hotel", "filters": {"context_id": "work"}},
    {"query": "golf hotel", "search_mode": "keyword", "filters": {"context_id": "work"}},
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: str(r))
def test_indexed_arms_answer_as_the_scoped_statements(varied, monkeypatch, request_):
    fast = without_time(varied.recall_v1(k=10, include_superseded=True, **request_))
    monkeypatch.setattr(search, "_listed_rows", lambda *a, **k: None)
    monkeypatch.setattr(search, "_indexed_keyword_arm", lambda *a, **k: None)
    exact = without_time(varied.recall_v1(k=10, include_superseded=True, **request_))
    assert fast == exact
    assert fast["results"]


def test_keyword_arm_falls_back_when_the_scope_turns_most_hits_away(memory_store_factory, monkeypatch):
    store = memory_store_factory(config=Config(track_access=False))
    ids = store.store_many([{"content": f"zulu {i}", "timestamp": day(1)} for i in range(120)]
                           + [{"content": f"zulu and a much longer text about other things {i}",
                               "timestamp": day(2)} for i in range(5)])
    for memory_id in ids[:120]:  # the best bm25 hits (short texts), archived
        store.update(memory_id, archived=True)
    fallbacks = []
    original = search._indexed_keyword_arm

    def watched(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        fallbacks.append(found is None)
        return found

    monkeypatch.setattr(search, "_indexed_keyword_arm", watched)
    fast = without_time(store.recall_v1("zulu", k=10, search_mode="keyword"))
    assert fallbacks == [True]
    assert sorted(ids.index(r["memory_id"]) for r in fast["results"]) == [120, 121, 122, 123, 124]
    monkeypatch.setattr(search, "_indexed_keyword_arm", lambda *a, **k: None)
    assert without_time(store.recall_v1("zulu", k=10, search_mode="keyword")) == fast


def test_near_duplicate_sharing_two_of_three_rare_words_is_found_by_words(memory_store_factory):
    table = {"quokka marmalade zeppelin festival": unit(0), "quokka marmalade blimp festival": unit(10),
             "festival": unit(80)}
    store = memory_store_factory(embedder=TableEmbedder(table), config=Config(track_access=False))
    first = store.store("quokka marmalade zeppelin festival", tags=["a"], timestamp=day(1))
    second = store.store("quokka marmalade blimp festival", tags=["b"], timestamp=day(2))
    for i in range(6):  # "festival" is common: not one of the rare words
        store.store(f"festival {i}", timestamp=day(3))
    # Keyword search with a tag filter: the pool cannot hold the neighbour, the words must.
    [row] = store.recall_v1("zeppelin", search_mode="keyword", filters={"tags": ["a"]})["results"]
    assert row["memory_id"] == first
    assert row["supersede_candidate"]["memory_id"] == second
    assert row["supersede_candidate"]["similarity"] == pytest.approx(math.cos(math.radians(10)), abs=1e-4)
