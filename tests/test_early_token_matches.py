"""The vector channel's finds are matched by their token codes while the other channels read
(late_interaction.early_token_matches); the rest of the pool is matched after them, and the two
products joined give every candidate the matches one product of the whole pool gives, to the bit.
A part is made only when it is at least SPLIT_CELLS large (BLAS's small-matrix kernels sum in
another order); a rest too small for a part takes the early part's last tokens with it, and an early
product made for other ids or another query is left unused."""

from __future__ import annotations

import numpy as np
import pytest

from localmem.recall import late_interaction
from localmem.recall.late_interaction import SPLIT_CELLS, early_token_matches, token_matches, token_matches_soon

from store_helpers import new_store

QUERY = "garden party Sunday went well"
WORDS = 40  # tokens per memory (the hash embedder gives one per word)


@pytest.fixture(scope="module")
def pool():
    """A store of 150 memories of WORDS words each, the query's tokens and every memory as a result."""
    store = new_store(embedder="hash")
    rng = np.random.default_rng(7)
    vocabulary = [f"w{n}" for n in range(400)] + QUERY.lower().split()
    ids = store.store_many([{"content": " ".join(rng.choice(vocabulary, WORDS))} for _ in range(150)])
    backend = store.backend
    tokens = backend.embed_query(QUERY, None).tokens
    yield backend, tokens, [{"id": i} for i in ids]
    store.close()


def least_tokens(tokens) -> int:
    """Stored tokens a part needs with this query (every query token is comparable here)."""
    return -(-SPLIT_CELLS // (tokens.shape[0] * 384))


def same(found, expected) -> bool:
    return found.keys() == expected.keys() and all(
        found[i][:6] == expected[i][:6] and found[i].per_token.tobytes() == expected[i].per_token.tobytes()
        for i in expected)


def products(monkeypatch) -> list[int]:
    """The stored tokens of each product made from now on."""
    made: list[int] = []
    original = late_interaction.similarities

    def noting(query, tokens, codes, dims):
        made.append(tokens)
        return original(query, tokens, codes, dims)

    monkeypatch.setattr(late_interaction, "similarities", noting)
    return made


def test_early_and_rest_parts_joined_are_the_whole_products_matches(pool, monkeypatch):
    backend, tokens, results = pool
    whole = token_matches(backend, results, tokens)
    made = products(monkeypatch)
    early = early_token_matches(backend, results[:80], tokens)
    assert early is not None
    joined = token_matches_soon(backend, results, tokens, early=early)()
    assert made == [80 * WORDS, 70 * WORDS]  # two parts, neither recomputed
    assert len(whole) == 150 and same(joined, whole)


def test_a_small_rest_takes_the_early_parts_last_tokens_with_it(pool, monkeypatch):
    backend, tokens, results = pool
    whole = token_matches(backend, results, tokens)
    made = products(monkeypatch)
    early = early_token_matches(backend, results[:145], tokens)
    joined = token_matches_soon(backend, results, tokens, early=early)()
    assert made == [145 * WORDS, least_tokens(tokens)] and 5 * WORDS < least_tokens(tokens) < 145 * WORDS
    assert same(joined, whole)


def test_an_early_part_just_large_enough_lends_the_rest_nearly_all_of_its_tokens(pool, monkeypatch):
    backend, tokens, results = pool
    first = -(-least_tokens(tokens) // WORDS)  # just enough memories for an early part
    results = results[:first + 2]
    whole = token_matches(backend, results, tokens)
    made = products(monkeypatch)
    early = early_token_matches(backend, results[:first], tokens)
    assert early is not None
    joined = token_matches_soon(backend, results, tokens, early=early)()
    assert made == [first * WORDS, least_tokens(tokens)] and least_tokens(tokens) > first * WORDS - WORDS
    assert same(joined, whole)


def test_nothing_is_started_for_too_few_tokens(pool, monkeypatch):
    backend, tokens, results = pool
    made = products(monkeypatch)
    assert early_token_matches(backend, results[:least_tokens(tokens) // WORDS - 1], tokens) is None
    assert early_token_matches(backend, [], tokens) is None
    assert early_token_matches(backend, results, None) is None
    assert made == []


def test_every_early_result_matched_needs_no_second_product(pool, monkeypatch):
    backend, tokens, results = pool
    whole = token_matches(backend, results[:100], tokens)
    made = products(monkeypatch)
    early = early_token_matches(backend, results[:100], tokens)
    assert same(token_matches_soon(backend, results[:100], tokens, early=early)(), whole)
    assert made == [100 * WORDS]


@pytest.mark.parametrize("change", ["order", "query"])
def test_an_early_product_for_other_ids_or_another_query_is_left_unused(pool, monkeypatch, change):
    backend, tokens, results = pool
    early = early_token_matches(backend, results[:80], tokens)
    if change == "order":  # its ids are no longer the first ones
        results, query_tokens = results[1:80] + results[:1] + results[80:], tokens
    else:
        query_tokens = backend.embed_query("an entirely different question", None).tokens
    whole = token_matches(backend, results, query_tokens)
    made = products(monkeypatch)
    found = token_matches_soon(backend, results, query_tokens, early=early)()
    assert made == [150 * WORDS]  # one product of the whole pool, as without it
    assert same(found, whole)


def test_a_recall_matching_early_answers_as_one_matching_late(pool, monkeypatch):
    tokens = pool[1]
    shipped = new_store(embedder="hash")
    rng = np.random.default_rng(11)
    vocabulary = [f"w{n}" for n in range(300)] + QUERY.lower().split()
    shipped.store_many([{"content": " ".join(rng.choice(vocabulary, WORDS))} for _ in range(200)])
    made = products(monkeypatch)
    early = shipped.recall(QUERY, limit=20)
    assert len(made) == 2 and made[0] >= least_tokens(tokens)  # the vector channel's finds first
    monkeypatch.setattr("localmem.recall.pipeline.early_token_matches", lambda *a, **k: None)
    shipped.backend._query_cache.clear()
    late = shipped.recall(QUERY, limit=20)
    assert len(made) == 3  # one product of the whole pool
    assert [(r["id"], r["final_score"], r.get("relevance")) for r in early["results"]] == \
        [(r["id"], r["final_score"], r.get("relevance")) for r in late["results"]]
    shipped.close()
