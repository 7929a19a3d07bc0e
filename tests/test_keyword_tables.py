"""recall/keyword_tables.py: keyword hits in a small scope from per-keyword tables give
exactly what the one-statement MATCH gives (recall_keyword_hits_listed.sql)."""

from __future__ import annotations

import json
import random

from localmem.recall.channels import make_scope
from localmem.recall.keyword_tables import hits_from_tables, term_tables
from localmem.recall.keywords import KeywordScorer, bm25_weights_sql
from localmem.recall.params import parse_recall_params
from localmem.recall.scope import FTS_SCOPE_KEY

WORDS = "coffee garden piano river dog cat paint hike camp museum book guitar soup city beach".split()


def fill(store, rng: random.Random, count: int) -> None:
    items = []
    for n in range(count):
        # Short texts from a small vocabulary: many memories tie on bm25.
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        items.append({"content": f"{['Ann', 'Bo'][n % 2]}: {text}", "tags": [f"conv:{n % 3}", f"session:{n % 7}"],
                      "metadata": {"session": n % 7}, "timestamp": f"2024-01-{1 + n % 28:02d}T10:{n % 60:02d}:00Z"})
    store.store_many(items)


def statement_hits(backend, scope, scorer, k, listed):
    """What channels.keyword_hits read before the tables: recall_keyword_hits_listed.sql."""
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    statement = scope.statement(backend, "recall_keyword_hits_listed", key=FTS_SCOPE_KEY).format(weights=weights)
    hits, found = [], {}
    for pk, bm25, top in backend.conn.execute(statement, {**scope.bindings, "match": scorer.match, "k": k,
                                                          "listed": json.dumps(listed)}):
        if top:
            hits.append((pk, bm25))
        else:
            found[pk] = bm25
    return tuple(hits), {pk: found.get(pk) for pk in listed}


def test_hits_and_listed_scores_equal_the_statement_s_to_the_bit(memory_store_factory) -> None:
    store = memory_store_factory(embedder="none")
    rng = random.Random(5)
    fill(store, rng, 400)
    backend = store.backend
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    all_pks = [row[0] for row in backend.conn.execute("SELECT pk FROM memories")]
    compared = 0
    for trial in range(60):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        tags = [f"conv:{trial % 3}"] if trial % 4 else [f"session:{trial % 7}"]
        params = parse_recall_params({"query": query, "tags": tags}, backend.config, None, store.now())
        scope = make_scope(params, backend.config.excluded_types)
        listed = rng.sample(all_pks, 25)  # in scope and outside it, holding the keywords or not
        k = rng.choice((5, 20, 50))
        expected_scorer, scorer = KeywordScorer(backend, query), KeywordScorer(backend, query)
        expected = statement_hits(backend, scope, expected_scorer, k, listed)
        tables = term_tables(backend, scope, scorer, weights)
        assert tables is not None
        got = hits_from_tables(backend, tables, scorer, k, listed, weights)
        assert got == expected[0], query
        assert {pk: scorer._known[pk] for pk in listed} == expected[1]
        compared += len(got)
    assert compared > 500


def test_tables_are_read_again_after_a_write(memory_store_factory) -> None:
    store = memory_store_factory(embedder="none")
    fill(store, random.Random(9), 60)
    backend = store.backend
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    params = parse_recall_params({"query": "piano", "tags": ["conv:0"]}, backend.config, None, store.now())
    scope = make_scope(params, backend.config.excluded_types)

    def hits() -> set[int]:
        scorer = KeywordScorer(backend, "piano")
        return {pk for pk, _ in hits_from_tables(backend, term_tables(backend, scope, scorer, weights),
                                                 scorer, 100, [1], weights)}

    before = hits()
    assert before and hits() == before  # the second time from the kept tables
    store.store("Ann: piano piano", tags=["conv:0"])
    new_pk = backend.conn.execute("SELECT max(pk) FROM memories").fetchone()[0]
    assert hits() == before | {new_pk}


def test_recall_in_a_small_scope_answers_as_before(memory_store_factory) -> None:
    """The whole recall with the tables on and with them unable to be kept (a write transaction
    is what turns the content cache off; here the scope check is made to fail instead)."""
    import localmem.recall.keyword_tables as keyword_tables
    store = memory_store_factory()
    fill(store, random.Random(3), 200)
    queries = ["piano river", "dog cat garden", "soup", "museum beach city hike"]
    with_tables = [store.recall(q, tags=["conv:1"], limit=10)["results"] for q in queries]
    saved = keyword_tables.TABLE_SCOPE_ROWS
    keyword_tables.TABLE_SCOPE_ROWS = 0
    try:
        without = [store.recall(q, tags=["conv:1"], limit=10)["results"] for q in queries]
    finally:
        keyword_tables.TABLE_SCOPE_ROWS = saved
    assert [[(r["id"], r["final_score"]) for r in a] for a in with_tables] == \
        [[(r["id"], r["final_score"]) for r in b] for b in without]


def test_hits_the_caller_holds_come_back_as_ids_and_the_count_stays(memory_store_factory) -> None:
    from localmem.recall.channels import keyword_candidates
    store = memory_store_factory(embedder="none")
    fill(store, random.Random(11), 120)
    backend = store.backend
    for tags in (["conv:2"], []):  # a narrowed scope and the whole store
        params = parse_recall_params({"query": "piano dog", "tags": tags}, backend.config, None, store.now())
        scope = make_scope(params, backend.config.excluded_types)
        full = keyword_candidates(backend, scope, KeywordScorer(backend, "piano dog"), None, 30)
        held = {c["_pk"]: c["id"] for c in full[::3]}
        assert len(full) > 6 and held
        got = keyword_candidates(backend, scope, KeywordScorer(backend, "piano dog"), None, 30, found=held)
        assert [c["id"] for c in got] == [c["id"] for c in full]
        for before, after in zip(full, got):
            assert after == ({"id": before["id"]} if before["_pk"] in held else before)


def test_the_kept_tables_start_over_beyond_their_row_budget(memory_store_factory) -> None:
    import localmem.recall.keyword_tables as keyword_tables
    store = memory_store_factory(embedder="none")
    fill(store, random.Random(13), 200)
    backend = store.backend
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    saved = keyword_tables.MAX_KEPT_ROWS
    keyword_tables.MAX_KEPT_ROWS = 100
    try:
        for word in WORDS:
            params = parse_recall_params({"query": word, "tags": ["conv:0"]}, backend.config, None, store.now())
            scope = make_scope(params, backend.config.excluded_types)
            scorer = KeywordScorer(backend, word)
            expected = statement_hits(backend, scope, KeywordScorer(backend, word), 20, [1, 2])
            assert hits_from_tables(backend, term_tables(backend, scope, scorer, weights), scorer, 20,
                                    [1, 2], weights) == expected[0]
            kept = backend.content_cache()["keyword_term_tables"]
            assert kept["rows"] == sum(len(v) for k, v in kept.items() if k != "rows")
            assert kept["rows"] <= 100 + 200  # one scope's keys and one table beyond the budget at most
    finally:
        keyword_tables.MAX_KEPT_ROWS = saved
