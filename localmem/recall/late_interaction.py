"""Late-interaction evidence: the candidates' vector component from their token codes.

Recall finds candidates by pooled vectors and keywords as before; then each
candidate that has token codes (storage/token_codes.py) is scored by MaxSim:
for every token of the query, the best-matching token of the memory, then
the mean over the query's tokens. Pooled vectors average a memory's words
into one direction, so a short reply that answers the question with one
telling word lies far from it; token matching keeps that word.

With MiniLM on the LoCoMo dev data, MaxSim over the centred sign codes is
about 0.2 for a random memory and 0.5 for a question's evidence (medians); a
memory holding every query token scores 1. ``token_score`` maps it onto the
[0, 1] of the vector component with one line fitted on the LoCoMo dev
conversations (``SCALE``, ``OFFSET``); the other components keep their
AutoMem weights. A candidate without codes
(stored with its own vector, imported, or written before schema 8) keeps
its cosine, so a store part-way through ``localmem reembed`` still ranks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from ..storage.token_codes import query_matrix, similarities

if TYPE_CHECKING:
    from ..storage.backend import Backend

SCALE = 2.0
OFFSET = 0.1


def token_score(max_sim: float) -> float:
    """The vector component a MaxSim value stands for, in [0, 1]."""
    return min(1.0, max(0.0, SCALE * (max_sim - OFFSET)))


class TokenMatch(NamedTuple):
    """How one memory's tokens matched the query's: MaxSim and the spread behind it."""

    max_sim: float  # mean over query tokens of the best memory token
    best: float  # the best single token match
    median: float  # median over query tokens of the best match
    share_over_half: float  # share of query tokens with a match above 0.5
    share_over_07: float  # ... above 0.7
    tokens: int  # the memory's token count
    # Per query token, the best match among the memory's tokens (max_sim is its mean).
    per_token: np.ndarray | None = None


# A query adapter of higher rank than this is no low-rank map localmem trains.
MAX_ADAPTER_RANK = 64
# Trained entries are far below one; products of larger ones would overflow float32.
MAX_ADAPTER_VALUE = 1e6


@dataclass(frozen=True)
class QueryAdapter:
    """A learned low-rank correction of the query's centred token vectors: ``q + (q·down)·upᵀ``.

    MiniLM places a question's tokens and the tokens of the statement that
    answers it in somewhat different directions ("what games" against "I
    played Valorant"). A map trained on questions and their evidence
    (``benchmarks/quality/train_learned_rank.py``) moves the query's tokens toward
    their answers before MaxSim. Only the query side changes, so stored codes
    stay as they are; it ships inside the learned-rank model file, whose trees
    were trained on the MaxSim it gives.
    """

    down: np.ndarray  # dims x rank
    up: np.ndarray  # dims x rank

    @classmethod
    def from_dict(cls, data: Any) -> "QueryAdapter":
        """An adapter from its JSON form; ValueError unless both matrices are finite and of
        one shape (dims x rank, rank at most MAX_ADAPTER_RANK and below dims)."""
        if not isinstance(data, dict):
            raise ValueError("malformed query adapter: not an object")
        try:
            down = np.array(data["down"], dtype=np.float64)
            up = np.array(data["up"], dtype=np.float64)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"malformed query adapter: {type(exc).__name__}: {exc}") from exc
        if (down.ndim != 2 or down.shape != up.shape or not 0 < down.shape[1] <= MAX_ADAPTER_RANK
                or down.shape[1] >= down.shape[0]):
            raise ValueError("malformed query adapter: down and up must both be dims x rank")
        if not all(np.isfinite(m).all() and np.abs(m).max() <= MAX_ADAPTER_VALUE for m in (down, up)):
            raise ValueError(f"malformed query adapter: non-finite values or values beyond ±{MAX_ADAPTER_VALUE:g}")
        return cls(down=down.astype(np.float32), up=up.astype(np.float32))

    @property
    def dimensions(self) -> int:
        return int(self.down.shape[0])

    def __call__(self, centred: np.ndarray) -> np.ndarray:
        """The adapted tokens (one per row)."""
        return centred + (centred @ self.down) @ self.up.T


def token_matches(backend: "Backend", results: list[dict[str, Any]],
                  query_tokens: np.ndarray, adapter: QueryAdapter | None = None) -> dict[str, TokenMatch]:
    """How each result's token codes match the query's tokens (moved by ``adapter``
    when given), by memory id (results without codes are left out)."""
    return token_matches_soon(backend, results, query_tokens, adapter, aside=False)()


# A token product is computed in parts only when each part is at least this large (stored
# tokens x query tokens x dimensions). OpenBLAS multiplies small matrices with other kernels
# (its "small matrix" paths, below about a million cells in this machine's build), whose sums
# can differ from the large kernel's in the last bit; at this size and above, each stored
# token's sums are the same whichever other tokens share the product, so the parts joined are
# the whole product to the bit (benchmarks/speed/early_tokens.py --blas checks it).
SPLIT_CELLS = 1 << 22


class _Codes(NamedTuple):
    """The token codes read for some results: ids and token counts of those that have usable
    codes, in the order asked, their codes joined, and every id asked (with codes or not)."""

    ids: list[str]
    counts: list[int]
    codes: bytes
    asked: list[str]


def _read_codes(backend: "Backend", results: list[dict[str, Any]], width: int) -> _Codes:
    asked = [r["id"] for r in results]
    rows = backend.conn.execute(backend.sql["token_codes_by_ids"], {"ids": json.dumps(asked)})
    # SQLite gives exact ints and bytes; a damaged row (another type, a wrong length) has no codes.
    usable = [row for row in rows
              if type(row[1]) is int and row[1] > 0 and type(row[2]) is bytes and len(row[2]) == row[1] * width]
    if not usable:
        return _Codes([], [], b"", asked)
    ids, counts, blobs = map(list, zip(*usable))
    return _Codes(ids, counts, b"".join(blobs), asked)


def _query(backend: "Backend", query_tokens: np.ndarray,
           adapter: QueryAdapter | None) -> np.ndarray | None:
    """The query matrix the product takes, or None when no token is comparable."""
    centre = backend.token_centre(record=False)
    dims = backend.dimensions
    if centre is None or not dims:
        return None
    query = query_matrix(query_tokens, centre, adapter)
    return query if query.shape[0] and query.shape[1] == dims else None


class EarlyMatches:
    """The token product of the first candidates found, started on another thread while the
    other channels read; ``token_matches_soon`` adds the rest's and gives what one product of
    them all would give, to the bit (SPLIT_CELLS), or ignores it when it does not fit."""

    def __init__(self, backend: "Backend", query: np.ndarray, codes: _Codes) -> None:
        self.query, self.codes = query, codes
        self.product = backend.aside.submit(similarities, query, sum(codes.counts), codes.codes,
                                            query.shape[1])

    def fits(self, query: np.ndarray, asked: list[str]) -> bool:
        """Whether it was made for this query matrix and for the first of these ids."""
        n = len(self.codes.asked)
        return np.array_equal(self.query, query) and asked[:n] == self.codes.asked


def early_token_matches(backend: "Backend", results: list[dict[str, Any]], query_tokens: np.ndarray | None,
                        adapter: QueryAdapter | None = None) -> EarlyMatches | None:
    """The first candidates' token product started now, when their tokens alone fill a part
    (SPLIT_CELLS); None otherwise (the product is then made whole, later)."""
    query = _query(backend, query_tokens, adapter) if query_tokens is not None and results else None
    if query is None:
        return None
    codes = _read_codes(backend, results, (query.shape[1] + 7) // 8)
    if sum(codes.counts) * query.shape[0] * query.shape[1] < SPLIT_CELLS:
        return None
    return EarlyMatches(backend, query, codes)


def token_matches_soon(backend: "Backend", results: list[dict[str, Any]], query_tokens: np.ndarray,
                       adapter: QueryAdapter | None = None, *, aside: bool = True,
                       early: EarlyMatches | None = None) -> Callable[[], dict[str, TokenMatch]]:
    """``token_matches`` as a function to call for it: the codes are read now, on this thread
    (the connection's), and with ``aside`` matched on another thread meanwhile (the product
    lets go of the GIL); the same matches either way. ``early``: the product of the first
    of ``results`` already started (early_token_matches), when it fits them."""
    query = _query(backend, query_tokens, adapter) if results else None
    if query is None:
        return dict
    dims = query.shape[1]
    width = (dims + 7) // 8
    if early is not None and early.fits(query, [r["id"] for r in results]):
        return _joined(backend, early, _read_codes(backend, results[len(early.codes.asked):], width))
    codes = _read_codes(backend, results, width)
    if not codes.ids:
        return dict
    if aside:
        return backend.aside.submit(_matches, query, codes.ids, codes.counts, codes.codes, dims)
    return lambda: _matches(query, codes.ids, codes.counts, codes.codes, dims)


def _joined(backend: "Backend", early: EarlyMatches, rest: _Codes) -> Callable[[], dict[str, TokenMatch]]:
    """The early product joined with the rest's, started now on another thread. A rest too small
    for a part of its own takes the early part's last tokens with it (the early part is a part's
    size, so it has enough)."""
    query, first = early.query, early.codes
    dims, width = query.shape[1], (query.shape[1] + 7) // 8
    first_tokens, rest_tokens = sum(first.counts), sum(rest.counts)
    ids, counts = first.ids + rest.ids, first.counts + rest.counts
    if not rest_tokens:
        return lambda: _matched(early.product(), ids, counts)
    least = -(-SPLIT_CELLS // (query.shape[0] * dims))
    taken = min(first_tokens, max(0, least - rest_tokens))  # of the early part's tokens
    tail = first.codes[len(first.codes) - taken * width:] if taken else b""
    product = backend.aside.submit(similarities, query, taken + rest_tokens, tail + rest.codes, dims)

    def joined() -> dict[str, TokenMatch]:
        later, sooner = product(), early.product()
        if later is None or sooner is None:
            return {}
        return _matched(np.concatenate([sooner[:, :first_tokens - taken], later], axis=1), ids, counts)
    return joined


def _matches(query: np.ndarray, ids: list[str], counts: list[int], codes: bytes,
             dims: int) -> dict[str, TokenMatch]:
    return _matched(similarities(query, sum(counts), codes, dims), ids, counts)


def _matched(similarity: np.ndarray | None, ids: list[str], counts: list[int]) -> dict[str, TokenMatch]:
    # Every candidate's tokens matched in one product (or parts joined to the same matrix),
    # then the best token per memory and query token.
    if similarity is None:
        return {}
    starts = np.cumsum([0] + counts[:-1])
    best = np.maximum.reduceat(similarity, starts, axis=1)
    stats = zip(best.mean(axis=0).tolist(), best.max(axis=0).tolist(), np.median(best, axis=0).tolist(),
                (best > 0.5).mean(axis=0).tolist(), (best > 0.7).mean(axis=0).tolist(), counts, best.T)
    return {memory_id: TokenMatch(*row) for memory_id, row in zip(ids, stats)}
