"""A query the model encodes in one run (the ONNX query graph) is encoded on another thread while
recall reads its keyword statistics (Backend.embed_query_soon, scoped_keywords.read_ahead): the
answer is the one of encoding first, a failure on that thread is said as before, and the
read-ahead reads what the keyword scores read, so they read nothing more. A pool's token codes
are matched on another thread too (late_interaction.token_matches_soon), alike."""

from __future__ import annotations

import threading

import pytest

from localmem.recall import late_interaction
from localmem.recall.channels import make_scope
from localmem.recall.params import parse_recall_params
from localmem.recall.scoped_keywords import read_ahead
from localmem.storage.aside import THREAD_NAME

from store_helpers import new_store
from test_query_adapter import garden_store, vectors
from test_query_delta import OTHER, DeltaHash, delta_model


class OneRunHash(DeltaHash):
    """DeltaHash, also giving a query's vector, tokens and 'tuned' tokens from one call, as
    OnnxEmbedder.embed_query does; it notes the thread of each call. ``fail``: that call
    raises instead."""

    def __init__(self, fail: str | None = None) -> None:
        super().__init__(fail)
        self.threads: list[str] = []

    def embed_query(self, text, delta):
        self.threads.append(threading.current_thread().name)
        if self.fail:
            raise ValueError(self.fail)
        vectors, tokens = self.embed_with_tokens([text])
        return vectors[0], tokens[0], self.embed_with_tokens([OTHER])[1][0]


QUERY = "garden party Sunday went well"


def aside_names(threads: list[str]) -> list[str]:
    """Each call's thread: one of the store's aside threads, or the caller's."""
    return ["caller" if name == threading.current_thread().name
            else "aside" if name.startswith(THREAD_NAME) else name for name in threads]


def answer(store, **params):
    return [(r["memory"]["content"], r["final_score"], r.get("relevance"))
            for r in store.recall(QUERY, **params)["results"]]


def test_encoded_on_another_thread_the_answer_is_that_of_encoding_first():
    aside = garden_store(OneRunHash())
    aside.learned_model = delta_model()
    first = garden_store(DeltaHash())  # the same encodings in two passes, in line
    first.learned_model = delta_model()
    embedder = aside.embedder
    got, expected = aside.recall(QUERY, adaptive_floor=False), first.recall(QUERY, adaptive_floor=False)
    assert aside_names(embedder.threads) == ["aside"]
    assert got["learned_rank"]["applied"] is True
    assert vectors(got) == vectors(expected)
    assert [(r["memory"]["content"], r["final_score"], r.get("relevance")) for r in got["results"]] == \
        [(r["memory"]["content"], r["final_score"], r.get("relevance")) for r in expected["results"]]
    assert answer(aside, adaptive_floor=False) == answer(first, adaptive_floor=False)
    assert aside_names(embedder.threads) == ["aside"]  # kept: not encoded again


def test_a_failure_on_the_encoding_thread_is_said_and_recall_goes_on():
    store = garden_store(OneRunHash(fail="query delta layer x is not in model 'hash'"))
    store.learned_model = delta_model()
    plain = vectors(garden_store(DeltaHash()).recall(QUERY, adaptive_floor=False))
    response = store.recall(QUERY, adaptive_floor=False)
    assert aside_names(store.embedder.threads) == ["aside"]
    assert response["learned_rank"] == {
        "applied": False,
        "reason": "the model's query delta could not be applied: query delta layer x is not in model 'hash'"}
    assert vectors(response) == pytest.approx(plain)  # MaxSim from the plain tokens of the in-line pass


def test_nothing_runs_aside_without_a_one_run_encoder():
    store = garden_store(DeltaHash())
    store.learned_model = delta_model()
    assert store.backend.embed_query_soon(QUERY, delta_model().query_delta) is None
    store = garden_store(OneRunHash())
    assert store.backend.embed_query_soon(QUERY, None) is None  # no delta: the ordinary pass


KEYWORD_STATISTICS = ("How many memories in the scope match one keyword", "One keyword's bm25",
                      "How many memories the scope admits")


def test_the_read_ahead_reads_what_the_keyword_scores_read_and_they_read_it_no_more():
    contents = [f"the garden party on Sunday number {i} went well" for i in range(12)] + \
               [f"tyres for the car, visit {i}" for i in range(12)]
    stores = [garden_store(OneRunHash(), keyword_scope_idf=True) for _ in range(2)]
    for store in stores:
        store.learned_model = delta_model()
        store.store_many([{"content": text, "tags": ["conv:1"]} for text in contents])
    ahead, fresh = stores
    backend = ahead.backend
    params = parse_recall_params({"query": QUERY, "tags": ["conv:1"]}, backend.config, backend.dimensions,
                                 backend.now())
    read_ahead(backend, make_scope(params, backend.config.excluded_types), QUERY)
    read: list[str] = []
    backend.conn.exec_trace = lambda cursor, sql, bindings: read.append(sql) or True
    with_read_ahead = answer(ahead, tags=["conv:1"], adaptive_floor=False)
    backend.conn.exec_trace = None
    assert not [sql for sql in read if any(name in sql for name in KEYWORD_STATISTICS)]
    fresh.backend.conn.exec_trace = lambda cursor, sql, bindings: read.append(sql) or True
    assert with_read_ahead == answer(fresh, tags=["conv:1"], adaptive_floor=False)
    fresh.backend.conn.exec_trace = None
    assert [sql for sql in read if any(name in sql for name in KEYWORD_STATISTICS)]  # recall reads them itself


def test_a_pools_token_codes_are_matched_on_another_thread_alike():
    store = new_store(embedder="hash")
    ids = store.store_many([{"content": f"the garden party on Sunday number {i} went well"} for i in range(40)])
    backend = store.backend
    query_tokens = backend.embed_query(QUERY, None).tokens
    results = [{"id": i} for i in ids]
    threads: list[str] = []
    original = late_interaction.similarities

    def noting(*args):
        threads.append(threading.current_thread().name)
        return original(*args)

    late_interaction.similarities = noting
    try:
        aside = late_interaction.token_matches_soon(backend, results, query_tokens)()
        in_line = late_interaction.token_matches(backend, results, query_tokens)
    finally:
        late_interaction.similarities = original
    assert aside_names(threads) == ["aside", "caller"]
    assert len(aside) == 40 and aside.keys() == in_line.keys()
    for memory_id, match in aside.items():
        other = in_line[memory_id]
        assert match[:6] == other[:6] and match.per_token.tobytes() == other.per_token.tobytes()
