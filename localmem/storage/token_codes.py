"""Token codes: one bit per dimension of each token vector, and MaxSim over them.

Late interaction scores a memory by how well each query token is matched by
some token of the memory (MaxSim, as ColBERT does), which keeps evidence a
pooled sentence vector averages away. Storing every token vector in float32
costs 1.5 KB per token with MiniLM; one bit per dimension costs 48 bytes.

A token's bits are the signs of its vector measured from a centre (the mean
direction of token vectors): the tokens of one model share a large common
direction, and signs taken from zero would mostly record it. The query side
stays in floating point, centred the same way, so a query token's match to a
memory token is ``q · sign(d - c) / |q|_1``: 1 for a token of the same signs
(the query's own word), and for dense vectors about the centred cosine.

Pure numpy; the SQL lives in ``sql/token_codes_*.sql``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .blas import one_blas_thread

MAX_TOKENS = 512  # codes kept per memory (models truncate their input well before this)


def _sign_table() -> np.ndarray:
    # byte -> its eight bits as ±1.0, lowest bit first (the "little" bit order of encode)
    table = (((np.arange(256)[:, None] >> np.arange(8)) & 1) * 2.0 - 1.0).astype(np.float32)
    table.flags.writeable = False
    return table


SIGNS_OF_BYTE = _sign_table()  # to decode, a lookup is 2-3x faster than unpackbits and a float conversion


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length one; zero and non-finite rows are dropped."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or not len(vectors):
        return np.zeros((0, vectors.shape[-1] if vectors.ndim == 2 else 0), dtype=np.float32)
    vectors = vectors[np.all(np.isfinite(vectors), axis=1)]
    norms = np.linalg.norm(vectors, axis=1)
    keep = norms > 1e-12
    return vectors[keep] / norms[keep, None]


def measure_centre(token_vectors: list[np.ndarray], dims: int) -> np.ndarray:
    """The mean of the unit token vectors of a sample of texts (float32, ``dims`` long)."""
    rows = [unit_rows(v) for v in token_vectors]
    rows = [r for r in rows if r.shape[0] and r.shape[1] == dims]
    if not rows:
        return np.zeros(dims, dtype=np.float32)
    return np.concatenate(rows).mean(axis=0).astype(np.float32)


def encode(token_vectors: np.ndarray, centre: np.ndarray) -> tuple[int, bytes]:
    """(token count, codes) of one text's token vectors: the sign bits of each
    unit vector minus the centre, packed eight dimensions to a byte."""
    rows = unit_rows(token_vectors)[:MAX_TOKENS]
    if not rows.shape[0] or rows.shape[1] != centre.shape[0]:
        return 0, b""
    bits = np.packbits(rows - centre > 0, axis=1, bitorder="little")
    return int(rows.shape[0]), bits.tobytes()


def encode_each(token_vectors: list[np.ndarray | None], centre: np.ndarray) -> list[tuple[int, bytes] | None]:
    """``encode`` of each text's token vectors; None for a text with none (or none usable)."""
    out: list[tuple[int, bytes] | None] = []
    for tokens in token_vectors:
        encoded = None if tokens is None else encode(tokens, centre)
        out.append(encoded if encoded is not None and encoded[0] else None)
    return out


def _packed(tokens: int, codes: bytes, dims: int) -> np.ndarray | None:
    """Stored codes as a (tokens x bytes per token) uint8 array; None when they do not fit."""
    width = (dims + 7) // 8
    if tokens <= 0 or len(codes) != tokens * width:
        return None
    return np.frombuffer(codes, dtype=np.uint8).reshape(tokens, width)


def decode(tokens: int, codes: bytes, dims: int) -> np.ndarray | None:
    """The ±1 sign matrix (tokens x dims, float32) of stored codes; None when they do not fit."""
    packed = _packed(tokens, codes, dims)
    if packed is None:
        return None
    return SIGNS_OF_BYTE[packed].reshape(tokens, packed.shape[1] * 8)[:, :dims]


def similarities(query: np.ndarray, tokens: int, codes: bytes, dims: int) -> np.ndarray | None:
    """``query @ decode(tokens, codes, dims).T`` (query tokens x stored tokens), without
    the ±1 matrix: with bits b in {0, 1}, q · (2b - 1) = 2 q · b - sum(q). The bits come
    straight from unpackbits, so recall's scoring of ~100 candidates takes about a third
    of the time the decoded matrix does. None when the codes do not fit. The product runs
    on one BLAS thread (storage/blas.py): reproducible, without waking idle threads."""
    packed = _packed(tokens, codes, dims)
    if packed is None or query.ndim != 2 or query.shape[1] != dims:
        return None
    bits = np.unpackbits(packed, axis=1, bitorder="little")[:, :dims].astype(np.float32)
    query = query.astype(np.float32, copy=False)
    with one_blas_thread():
        # The stored tokens as the rows of the product: the same sums (one per pair, over
        # the dimensions in order), faster in BLAS; laid out as before for the reductions.
        product = np.ascontiguousarray((bits @ query.T).T)
    return 2.0 * product - query.sum(axis=1, keepdims=True)


def query_matrix(token_vectors: np.ndarray, centre: np.ndarray,
                 adapt: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """The query's tokens measured from the centre, each divided by its L1 norm, so that
    its product with a sign matrix is 1 for a memory token of the same signs (the token
    itself) and about its centred cosine otherwise, for dense and sparse vectors alike.
    ``adapt`` maps the centred tokens (one per row) before they are normalised."""
    rows = unit_rows(token_vectors)
    if not rows.shape[0] or rows.shape[1] != centre.shape[0]:
        return rows[:0]
    centred = rows - centre
    if adapt is not None:
        centred = adapt(centred)
    l1 = np.abs(centred).sum(axis=1)
    keep = l1 > 1e-12
    return centred[keep] / l1[keep, None]


def max_sim(query: np.ndarray, signs: np.ndarray) -> float:
    """Mean over query tokens of the best match among the memory's tokens."""
    if not query.shape[0] or not signs.shape[0]:
        return 0.0
    return float((query @ signs.T).max(axis=1).mean())
