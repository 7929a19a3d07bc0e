"""Candidate features from each pool's per-query-token matches (TokenMatch.per_token)."""
import numpy as np


def token_matrix(pool):
    """Query tokens x candidates; a candidate without codes gets the pool's lowest match."""
    have = [c for c in pool["per_token"] if c is not None]
    if not have:
        return None
    width = len(have[0])
    matrix = np.array([c if c is not None else np.full(width, np.nan) for c in pool["per_token"]], np.float64).T
    return np.where(np.isnan(matrix), np.nanmin(matrix), matrix)


def residual(pool, matrix, k):
    """Mean over query tokens of how far each candidate's match exceeds the best of the k
    highest-scored other candidates (0 where it does not)."""
    top = np.argsort(-pool["final"], kind="stable")[:k + 1]
    out = np.zeros(matrix.shape[1])
    for c in range(matrix.shape[1]):
        others = [i for i in top if i != c][:k]
        out[c] = np.maximum(0, matrix[:, c] - matrix[:, others].max(1)).mean()
    return out


def comp(pool):
    """Six candidates for a feature, as columns: contrastive MaxSim (per-token z-scores
    over the pool), its best token, the share of query tokens the candidate matches best,
    the residual over the best other by MaxSim, the residual over the top 3 by weighted
    score, and MaxSim weighted by each token's spread over the pool."""
    n = len(pool["labels"])
    out = np.zeros((n, 6))
    matrix = token_matrix(pool) if n else None
    if matrix is None:
        return out
    spread = matrix.std(1, keepdims=True) + 1e-6
    z = (matrix - matrix.mean(1, keepdims=True)) / spread
    out[:, 0], out[:, 1] = z.mean(0), z.max(0)
    out[:, 2] = (matrix >= matrix.max(1, keepdims=True) - 1e-9).mean(0)
    by_maxsim = {**pool, "final": matrix.mean(0)}
    out[:, 3] = residual(by_maxsim, matrix, 1)
    out[:, 4] = residual(pool, matrix, 3)
    out[:, 5] = (matrix * (spread[:, 0] / spread[:, 0].sum())[:, None]).sum(0)
    out[np.array([c is None for c in pool["per_token"]])] = 0.0
    return out


def with_columns(cache, pool, make, key=()):
    """The pool's features with ``make(pool)``'s columns beside them, made once per pool."""
    slot = (id(pool), key)
    if slot not in cache:
        extra = make(pool)
        cache[slot] = np.column_stack([pool["rows"], extra.reshape(len(pool["labels"]), -1)])
    return cache[slot]
