"""Recall's cheap plans for a tag scope give the answer of the plain scoped search.

The vector channel lists a narrow scope's memories from the tag index alone and
checks the rest of the scope (archived, excluded types) on the kNN's hits; the
keyword channel ranks a broad scope's hits from the store-wide index top and
checks them against the scope. Both fall back to the full scoped search when
the check turns too many away.
"""

from __future__ import annotations

import numpy as np
import pytest

import localmem.recall.channels as channels
from localmem import Config
from localmem.recall.channels import keyword_candidates, make_scope, vector_candidates
from localmem.recall.keywords import KeywordScorer
from localmem.recall.params import parse_recall_params
from localmem.storage.database import read_transaction

DIMS = 384


def scope_of(store, **params):
    backend = store._backend
    parsed = parse_recall_params(params, backend.config, backend.dimensions, backend.now())
    return backend, make_scope(parsed, backend.config.excluded_types)


def near(query: np.ndarray, rank: int, rng: np.random.Generator) -> list[float]:
    """A unit vector whose cosine to ``query`` falls as ``rank`` grows."""
    noise = rng.standard_normal(DIMS)
    noise -= noise @ query * query
    noise /= np.linalg.norm(noise)
    angle = 0.05 + 0.02 * rank
    return (np.cos(angle) * query + np.sin(angle) * noise).tolist()


@pytest.fixture
def query_vector():
    rng = np.random.default_rng(7)
    v = rng.standard_normal(DIMS)
    return v / np.linalg.norm(v)


def vector_ids(store, query: np.ndarray, k: int, **params) -> list[str]:
    backend, scope = scope_of(store, **params)
    with read_transaction(store.conn):
        found = vector_candidates(backend, scope, query.astype(np.float32).tobytes(), k)
    return [c["id"] for c in found]


def test_vector_channel_passes_over_archived_memories_nearest_the_query(memory_store, query_vector):
    rng = np.random.default_rng(1)
    ids = []
    for rank in range(60):
        # The twelve nearest are archived: more than the plan's margin, so it must redo
        # the scan among the memories the whole scope admits.
        ids.append(memory_store.store(f"note {rank}", tags=["proj"], archived=rank < 12,
                                      embedding=near(query_vector, rank, rng)))
    for rank in range(20):  # nearer still, outside the tag scope
        memory_store.store(f"other {rank}", tags=["elsewhere"], embedding=near(query_vector, -1, rng))
    assert channels.UNCHECKED_MARGIN < 12
    assert vector_ids(memory_store, query_vector, 20, tags=["proj"]) == ids[12:32]


def test_vector_channel_margin_covers_a_few_turned_away(memory_store_factory, query_vector):
    memory_store = memory_store_factory(config=Config.from_env({"RECALL_EXCLUDED_TYPES": "Habit"}))
    rng = np.random.default_rng(2)
    ids = [memory_store.store(f"note {rank}", tags=["proj"], archived=rank in (0, 3),
                              type="Habit" if rank == 5 else "Insight",
                              embedding=near(query_vector, rank, rng)) for rank in range(40)]
    expected = [i for rank, i in enumerate(ids) if rank not in (0, 3, 5)][:10]
    assert vector_ids(memory_store, query_vector, 10, tags=["proj"]) == expected
    # The same answer where the tag index cannot answer alone (all of several tags,
    # excluded tags), which lists every memory the scope admits.
    assert vector_ids(memory_store, query_vector, 10, tags=["proj"], exclude_tags=["nothing"]) == expected
    assert vector_ids(memory_store, query_vector, 10, tags=["proj", "proj"], tag_mode="all") == expected


def keyword_ids(store, query: str, k: int, **params) -> list[str]:
    backend, scope = scope_of(store, query=query, **params)
    with read_transaction(store.conn):
        found = keyword_candidates(backend, scope, KeywordScorer(backend, query), None, k)
    return [c["id"] for c in found]


@pytest.fixture
def broad_at_ten(monkeypatch):
    """Treat a scope of more than ten memories as broad."""
    monkeypatch.setattr(channels, "NARROW_SCOPE_ROWS", 10)


@pytest.fixture
def statements_run(memory_store):
    """The first comment line of every statement the store's connection runs."""
    run: list[str] = []

    def trace(cursor, sql, bindings):
        run.append(sql.lstrip().splitlines()[0])
        return True

    memory_store.conn.exec_trace = trace
    yield run
    memory_store.conn.exec_trace = None


SCOPED_HITS = "-- Keyword channel hits within a narrowed scope"
SCOPE_CHECK = "-- Which of the given memories"


def ran(statements: list[str], header: str) -> bool:
    return any(line.startswith(header) for line in statements)


def scoped_answer(store, monkeypatch, query: str, k: int, **params) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(channels, "NARROW_SCOPE_ROWS", 10**9)
        return keyword_ids(store, query, k, **params)


def store_falcons(store, *, inside: int, outside: int, tail: str = "") -> None:
    """Reports of a falcon in the scope "broad", and memories outside it whose bm25 is better."""
    for i in range(inside):
        store.store(f"The falcon report number {i}{tail}", tags=["broad"])
    for i in range(outside):
        store.store(f"falcon falcon {i}", tags=["outside"])


def broad_plans(store, monkeypatch, statements_run: list[str], k: int) -> tuple[bool, bool]:
    """Check that recall's keyword hits for "falcon" in the scope "broad" are the plain
    scoped search's k; say which plans gave them: (the store-wide top checked against
    the scope, the scoped search)."""
    expected = scoped_answer(store, monkeypatch, "falcon", k, tags=["broad"])
    assert len(expected) == k
    statements_run.clear()
    assert keyword_ids(store, "falcon", k, tags=["broad"]) == expected
    return ran(statements_run, SCOPE_CHECK), ran(statements_run, SCOPED_HITS)


def test_keyword_hits_of_a_broad_scope_from_the_store_wide_top(memory_store, monkeypatch, broad_at_ten,
                                                              statements_run):
    for i in range(30):
        memory_store.store(f"The falcon report number {i} " + "filler " * (i % 7), tags=["broad:part"])
    for i in range(10):
        memory_store.store(f"A falcon falcon sighting {i}", tags=["outside"])
    memory_store.store("The falcon report, archived", tags=["broad"], archived=True)
    assert broad_plans(memory_store, monkeypatch, statements_run, 8) == (True, False)


def test_keyword_hits_of_a_broad_scope_fall_back_when_the_best_are_outside(memory_store, monkeypatch,
                                                                          statements_run):
    monkeypatch.setattr(channels, "NARROW_SCOPE_ROWS", 29)  # the 30 memories below are a broad scope
    # The store-wide top the plan reads (2 × 10 × 110 / 30 = 74 hits) holds none in scope.
    store_falcons(memory_store, inside=30, outside=80, tail=" with a long tail of other words")
    assert broad_plans(memory_store, monkeypatch, statements_run, 10) == (True, True)


def test_tag_scoped_keyword_search_keeps_its_answer_with_the_rowid_key(memory_store):
    # The tag test reads the FTS rowid (+f.rowid), not the memories row: same hits.
    kept = memory_store.store("Quartz clock repair notes", tags=["shop:clocks"])
    memory_store.store("Quartz watch battery", tags=["shop:watches"])
    memory_store.store("Quartz clock, archived", tags=["shop:clocks"], archived=True)
    assert keyword_ids(memory_store, "quartz", 10, tags=["shop:clocks"]) == [kept]
    assert len(keyword_ids(memory_store, "quartz", 10, tags=["shop"])) == 2
    assert keyword_ids(memory_store, "quartz", 10, tags=["shop:clocks", "shop"], tag_mode="all") == [kept]


def test_a_broad_scope_too_small_a_share_for_the_store_wide_top_is_searched_scoped(
        memory_store, monkeypatch, broad_at_ten, statements_run):
    # 12 of 112 memories: reaching 10 of them through the store-wide top would take
    # 2 × 10 × 112 / 12 = 187 hits, over the plan's limit (here 100).
    monkeypatch.setattr(channels, "MAX_UNSCOPED_HITS", 100)
    store_falcons(memory_store, inside=12, outside=100)
    assert broad_plans(memory_store, monkeypatch, statements_run, 10) == (False, True)


def test_scope_sizes_kept_between_recalls_follow_a_write(memory_store):
    for i in range(5):
        memory_store.store(f"note {i}", tags=["proj"])
    _, scope = scope_of(memory_store, tags=["proj"])
    with read_transaction(memory_store.conn):
        assert scope.size_bounds(memory_store._backend, 100) == (5, None)
    memory_store.store("one more", tags=["proj"])
    _, scope = scope_of(memory_store, tags=["proj"])
    with read_transaction(memory_store.conn):
        assert scope.size_bounds(memory_store._backend, 100) == (6, None)


def test_unscoped_keyword_hits_and_the_listed_bm25_come_from_one_pass(memory_store):
    # Many hits tie on bm25 (same words, same length): the pass that also scores the
    # listed memories must give the plain ranking's top k, ties in pk order, and the
    # bm25 the scores statement gives each listed memory (none for one without the term).
    for i in range(40):
        memory_store.store(f"heron nest {i % 3}" + " reed" * (i % 4))
    memory_store.store("no such bird here")
    backend, scope = scope_of(memory_store)
    weights = channels.bm25_weights_sql(backend.config.keyword_column_weights)
    pks = [pk for (pk,) in memory_store.conn.execute("SELECT pk FROM memories ORDER BY pk")]
    listed = [pks[3], pks[17], pks[-1], pks[25]]
    with read_transaction(memory_store.conn):
        plain = KeywordScorer(backend, "heron")
        expected = tuple(memory_store.conn.execute(
            backend.sql["recall_keyword_broad_hits"].format(weights=weights), {"match": plain.match, "k": 10}))
        scores = dict(memory_store.conn.execute(backend.sql["recall_keyword_scores"].format(weights=weights),
                                                {"match": plain.match, "pks": "[%s]" % ",".join(map(str, listed))}))
        scorer = KeywordScorer(backend, "heron")
        assert channels.keyword_hits(backend, scope, scorer, 10, listed) == expected
    assert len({bm25 for _, bm25 in expected}) < len(expected)  # ties inside the top 10
    assert scorer._known == {pk: scores.get(pk) for pk in listed} and scorer._known[pks[-1]] is None


def test_kept_unscoped_keyword_hits_come_from_the_pass_that_scores_the_listed(memory_store, monkeypatch):
    monkeypatch.setattr(channels, "CACHED_HITS_POSTINGS", 0)  # keep every query's hits
    for i in range(20):
        memory_store.store(f"egret marsh {i}" + " mud" * (i % 5))
    backend, scope = scope_of(memory_store)
    pks = [pk for (pk,) in memory_store.conn.execute("SELECT pk FROM memories ORDER BY pk")]
    with read_transaction(memory_store.conn):
        first = KeywordScorer(backend, "egret")
        hits = channels.keyword_hits(backend, scope, first, 5, [pks[2], pks[15]])
        again = KeywordScorer(backend, "egret")
        assert channels.keyword_hits(backend, scope, again, 5, [pks[9]]) == hits  # from the cache
        plain = channels.keyword_hits(backend, scope, KeywordScorer(backend, "egret"), 5, [])
    assert len(hits) == 5 and plain == hits
    assert set(first._known) == {pks[2], pks[15]} and all(v is not None for v in first._known.values())
    assert again._known == {}  # its listed memory is scored later, by the scores statement
