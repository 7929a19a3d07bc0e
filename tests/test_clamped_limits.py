"""A paging number held to its range is said: ``by_tag`` and ``related`` keep AutoMem's clamps
(``limit`` 0 reads as 1, 10,000 as 200, ``max_depth`` 9 as 3) and answer them in ``warnings``,
as recall does for its ``limit``, instead of a page that is quietly not the one asked for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localmem import MemoryStore

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from localmem.http.app import create_app
from tests.test_http import running


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hash") as opened:
        ids = [opened.store(f"note {i} on the atlas", tags=["atlas"]) for i in range(3)]
        opened.associate(ids[0], ids[1])
        yield opened


@pytest.mark.parametrize("limit, used, words", [(0, 1, "below the minimum 1"), (10_000, 200, "above the maximum 200")])
def test_by_tag_says_a_limit_it_held(store, limit, used, words):
    page = store.by_tag(["atlas"], limit=limit)
    assert page["limit"] == used
    assert any(f"'limit' {limit} is {words}; {used} was used" in w for w in page["warnings"]), page.get("warnings")


def test_related_says_a_depth_and_a_limit_it_held(store):
    memory_id = store.by_tag(["atlas"])["memories"][0]["id"]
    answer = store.related(memory_id, max_depth=9, limit=-1)
    assert (answer["max_depth"], answer["limit"]) == (3, 1)
    assert any("'max_depth' 9 is above the maximum 3" in w for w in answer["warnings"])
    assert any("'limit' -1 is below the minimum 1" in w for w in answer["warnings"])


def test_a_limit_in_range_brings_no_warning(store):
    assert "warnings" not in store.by_tag(["atlas"], limit=2)
    memory_id = store.by_tag(["atlas"])["memories"][0]["id"]
    assert "warnings" not in store.related(memory_id, max_depth=2, limit=5)


def test_http_answers_carry_the_warning(store):
    with running(create_app(store)) as url, httpx.Client(base_url=url) as client:
        body = client.get("/memory/by-tag?tags=atlas&limit=0").json()
        assert body["limit"] == 1 and any("'limit' 0" in w for w in body["warnings"])
