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


def token_matches_soon(backend: "Backend", results: list[dict[str, Any]], query_tokens: np.ndarray,
                       adapter: QueryAdapter | None = None, *,
                       aside: bool = True) -> Callable[[], dict[str, TokenMatch]]:
    """``token_matches`` as a function to call for it: the codes are read now, on this thread
    (the connection's), and with ``aside`` matched on another thread meanwhile (the product
    lets go of the GIL); the same matches either way."""
    centre = backend.token_centre(record=False)
    dims = backend.dimensions
    if centre is None or not dims or not results:
        return dict
    query = query_matrix(query_tokens, centre, adapter)
    if not query.shape[0] or query.shape[1] != dims:
        return dict
    width = (dims + 7) // 8
    rows = backend.conn.execute(backend.sql["token_codes_by_ids"],
                                {"ids": json.dumps([r["id"] for r in results])})
    # SQLite gives exact ints and bytes; a damaged row (another type, a wrong length) has no codes.
    usable = [row for row in rows
              if type(row[1]) is int and row[1] > 0 and type(row[2]) is bytes and len(row[2]) == row[1] * width]
    if not usable:
        return dict
    ids, counts, blobs = map(list, zip(*usable))
    codes = b"".join(blobs)
    if aside:
        return backend.aside.submit(_matches, query, ids, counts, codes, dims)
    return lambda: _matches(query, ids, counts, codes, dims)


def _matches(query: np.ndarray, ids: list[str], counts: list[int], codes: bytes,
             dims: int) -> dict[str, TokenMatch]:
    # Every candidate's tokens matched in one product, then the best token per
    # memory and query token.
    similarity = similarities(query, sum(counts), codes, dims)
    if similarity is None:
        return {}
    starts = np.cumsum([0] + counts[:-1])
    best = np.maximum.reduceat(similarity, starts, axis=1)
    stats = zip(best.mean(axis=0).tolist(), best.max(axis=0).tolist(), np.median(best, axis=0).tolist(),
                (best > 0.5).mean(axis=0).tolist(), (best > 0.7).mean(axis=0).tolist(), counts, best.T)
    return {memory_id: TokenMatch(*row) for memory_id, row in zip(ids, stats)}
