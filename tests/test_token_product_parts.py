"""A pool's token product is made in parts of equal size that stay in the core's cache
(token_codes.similarities): each part is at least SPLIT_CELLS large, where BLAS sums every
stored token's products the same way whichever tokens share its product, so the parts give the
one product's matrix to the bit; a pool under two parts, or a query of one token (a matrix-vector
product, whose kernel sums a block's last rows in another order), is multiplied whole, as before."""

from __future__ import annotations

import numpy as np
import pytest

from localmem.storage import token_codes
from localmem.storage.blas import one_blas_thread
from localmem.storage.token_codes import PART_TOKENS, SPLIT_CELLS, part_tokens, similarities

DIMS = 384
WIDTH = DIMS // 8


def one_product(query: np.ndarray, tokens: int, codes: bytes) -> np.ndarray:
    """The product as one matrix multiplication (what similarities computed before parts)."""
    packed = np.frombuffer(codes, np.uint8).reshape(tokens, WIDTH)
    bits = np.unpackbits(packed, axis=1, bitorder="little")[:, :DIMS].astype(np.float32)
    with one_blas_thread():
        product = np.ascontiguousarray((bits @ query.T).T)
    return 2.0 * product - query.sum(axis=1, keepdims=True)


def pool(rng: np.random.Generator, tokens: int, query_tokens: int) -> tuple[np.ndarray, bytes]:
    query = (rng.standard_normal((query_tokens, DIMS)) / DIMS).astype(np.float32)
    return query, rng.integers(0, 256, tokens * WIDTH, dtype=np.uint8).tobytes()


def test_a_part_is_at_least_split_cells_and_part_tokens():
    for query_tokens in (1, 3, 5, 13, 40, 200):
        size = part_tokens(query_tokens, DIMS)
        assert size >= PART_TOKENS and size * query_tokens * DIMS >= SPLIT_CELLS
    assert part_tokens(40, DIMS) == PART_TOKENS  # many query tokens: the floor
    assert part_tokens(1, DIMS) == SPLIT_CELLS // DIMS + 1  # one query token: the cells decide


@pytest.mark.parametrize("query_tokens", [1, 2, 3, 4, 13, 40])
def test_parts_give_the_one_products_matrix_to_the_bit(query_tokens):
    rng = np.random.default_rng(query_tokens)
    size = part_tokens(query_tokens, DIMS)
    # Exactly two parts, two parts and one token (the last part goes back over its neighbour),
    # several parts with a short tail, and a pool just under two parts (made whole).
    for tokens in (2 * size, 2 * size + 1, 5 * size + size // 3, 2 * size - 1):
        query, codes = pool(rng, tokens, query_tokens)
        found = similarities(query, tokens, codes, DIMS)
        expected = one_product(query, tokens, codes)
        assert found.shape == expected.shape == (query_tokens, tokens)
        assert found.dtype == expected.dtype and found.tobytes() == expected.tobytes()


def test_every_part_is_the_same_size_and_covers_every_token(monkeypatch):
    rng = np.random.default_rng(5)
    query_tokens = 13
    size = part_tokens(query_tokens, DIMS)
    tokens = 3 * size + 7
    query, codes = pool(rng, tokens, query_tokens)
    shapes: list[tuple[int, int]] = []
    original = np.matmul

    def noting(a, b, **kwargs):
        shapes.append(a.shape)
        return original(a, b, **kwargs)

    monkeypatch.setattr(token_codes.np, "matmul", noting)
    found = similarities(query, tokens, codes, DIMS)
    assert shapes == [(size, DIMS)] * 4  # three parts and the last, ending at the last token
    monkeypatch.undo()
    assert found.tobytes() == one_product(query, tokens, codes).tobytes()


def test_a_small_pool_or_a_one_token_query_is_one_product(monkeypatch):
    rng = np.random.default_rng(9)
    shapes: list[tuple[int, int]] = []
    original = np.matmul
    monkeypatch.setattr(token_codes.np, "matmul", lambda a, b, **k: shapes.append(a.shape) or original(a, b, **k))
    small, codes = pool(rng, 40, 5)
    assert 40 < 2 * part_tokens(5, DIMS)
    assert similarities(small, 40, codes, DIMS).tobytes() == one_product(small, 40, codes).tobytes()
    tokens = 3 * part_tokens(1, DIMS)
    single, codes = pool(rng, tokens, 1)
    assert similarities(single, tokens, codes, DIMS).tobytes() == one_product(single, tokens, codes).tobytes()
    assert shapes == [(40, DIMS), (tokens, DIMS)]
