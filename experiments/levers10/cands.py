"""Candidate features for levers10, each a function of one recorded pool (levers9/record.py)
giving one column per candidate. They read only what recall has per candidate: the
weighted score, the per-query-token best matches (TokenMatch.per_token) and the thread
(here the LoCoMo session in the turn's key, as thread_key finds it in the session tag)."""
import numpy as np
from feats import token_matrix  # levers9/feats.py (exp.py puts levers9 on the path)

LEADERS = 3


def _threads(pool):
    """Per candidate: its thread's other pool members, and the members in turn order."""
    groups = {}
    for i, key in enumerate(pool["keys"]):
        session, turn = key.split("/")[1].split(":")
        groups.setdefault(session, []).append((int(turn), i))
    members = {}
    for rows in groups.values():
        ordered = [i for _, i in sorted(rows)]
        for i in ordered:
            members[i] = ordered
    return members


def _guard(fn):
    """0 for a pool without token matches and for candidates without codes."""
    def column(pool):
        n = len(pool["labels"])
        matrix = token_matrix(pool) if n else None
        if matrix is None:
            return np.zeros(n)
        out = np.asarray(fn(pool, matrix), dtype=np.float64)
        out[np.array([c is None for c in pool["per_token"]])] = 0.0
        return out
    column.__name__ = fn.__name__
    return column


def _leaders(pool, k):
    return np.argsort(-pool["final"], kind="stable")[:k + 1].tolist()


def _others(leaders, c, k):
    return [i for i in leaders if i != c][:k]


def complement(m):
    """max over the top-m others o by weighted score of mean_t max(c_t, o_t) - max(mean c, mean o):
    how much c completes a partner's coverage (0 when it adds nothing to any)."""
    @_guard
    def complement_m(pool, matrix):
        means = matrix.mean(0)
        top = _leaders(pool, m)
        out = np.zeros(matrix.shape[1])
        for c in range(matrix.shape[1]):
            others = _others(top, c, m)
            joint = np.maximum(matrix[:, [c]], matrix[:, others]).mean(0)
            out[c] = (joint - np.maximum(means[c], means[others])).max()
        return out
    complement_m.__name__ = f"complement{m}"
    return complement_m


def complement_pool():
    """As complement but over every other candidate of the pool."""
    @_guard
    def complement_all(pool, matrix):
        means = matrix.mean(0)
        n = matrix.shape[1]
        out = np.zeros(n)
        for c in range(n):
            joint = np.maximum(matrix[:, [c]], matrix).mean(0) - np.maximum(means[c], means)
            joint[c] = -np.inf
            out[c] = joint.max() if n > 1 else 0.0
        return out
    return complement_all


@_guard
def thread_residual(pool, matrix):
    """Mean over query tokens of how far c's match exceeds the best of its thread's other
    pool members (-1 for a candidate alone in its thread in the pool)."""
    members = _threads(pool)
    out = np.full(matrix.shape[1], -1.0)
    for c, ordered in members.items():
        others = [i for i in ordered if i != c]
        if others:
            out[c] = np.maximum(0.0, matrix[:, c] - matrix[:, others].max(1)).mean()
    return out


@_guard
def thread_gain(pool, matrix):
    """How much the thread's other pool members add to c's coverage:
    mean_t max(c_t, their best_t) - mean_t c_t (0 alone)."""
    members = _threads(pool)
    out = np.zeros(matrix.shape[1])
    for c, ordered in members.items():
        others = [i for i in ordered if i != c]
        if others:
            out[c] = np.maximum(matrix[:, c], matrix[:, others].max(1)).mean() - matrix[:, c].mean()
    return out


@_guard
def neighbour_gain(pool, matrix):
    """As thread_gain, for the pool neighbours just before and after c in its thread."""
    members = _threads(pool)
    out = np.zeros(matrix.shape[1])
    for c, ordered in members.items():
        p = ordered.index(c)
        others = ordered[max(0, p - 1):p] + ordered[p + 1:p + 2]
        if others:
            out[c] = np.maximum(matrix[:, c], matrix[:, others].max(1)).mean() - matrix[:, c].mean()
    return out


def _residual(pool, matrix, weights, k=LEADERS, reduce="mean"):
    top = _leaders(pool, k)
    out = np.zeros(matrix.shape[1])
    for c in range(matrix.shape[1]):
        gap = np.maximum(0.0, matrix[:, c] - matrix[:, _others(top, c, k)].max(1))
        out[c] = gap.max() if reduce == "max" else (gap * weights).sum()
    return out


@_guard
def rare_residual(pool, matrix):
    """The token residual with each query token weighted by how few candidates match it
    nearly as well as the pool's best (within 0.05): 1/count, normalised to sum 1."""
    count = (matrix >= matrix.max(1, keepdims=True) - 0.05).sum(1)
    weights = 1.0 / count
    return _residual(pool, matrix, weights / weights.sum())


@_guard
def stand_residual(pool, matrix):
    """The token residual with each token weighted by how far the pool's best match stands
    above the pool's median for it (normalised)."""
    weights = matrix.max(1) - np.median(matrix, 1) + 1e-6
    return _residual(pool, matrix, weights / weights.sum())


@_guard
def residual_max(pool, matrix):
    """The largest single-token residual over the top 3 (the token residual's max, not mean)."""
    return _residual(pool, matrix, None, reduce="max")


@_guard
def leaders_coverage(pool, matrix):
    """Query-level: mean_t of the best match among the top 3 by weighted score, minus the
    pool's best per token (how much of the query the leaders leave uncovered, negated)."""
    top = _leaders(pool, LEADERS)[:LEADERS]
    return np.full(matrix.shape[1], (matrix[:, top].max(1) - matrix.max(1)).mean())


@_guard
def residual_rank(pool, matrix):
    """Reciprocal rank of the token residual within the pool (the shipped column)."""
    from localmem.recall import learned_rank
    values = pool["rows"][:, learned_rank.FEATURES.index("token_residual")]
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return 1.0 / (1.0 + ranks)


CANDIDATES = {f.__name__: f for f in (
    complement(3), complement(10), complement_pool(), thread_residual, thread_gain, neighbour_gain,
    rare_residual, stand_residual, residual_max, leaders_coverage, residual_rank)}


_STAMPS = {}


def _stamp(key):
    """A turn's time (epoch seconds) from its key, read from the LoCoMo data once."""
    if not _STAMPS:
        import json
        from datetime import datetime

        import locomo
        for index, sample in enumerate(json.load(open(locomo.DEFAULT_DATA, encoding="utf-8"))):
            for turn in locomo.turns_of(sample):
                _STAMPS[f"conv:{index}/{turn['dia_id']}"] = datetime.fromisoformat(turn["timestamp"]).timestamp()
    return _STAMPS[key]


@_guard
def leader_days(pool, matrix):
    """log1p of the days between c and the nearest in time of the top 3 others by weighted score."""
    top = _leaders(pool, LEADERS)
    stamps = np.array([_stamp(k) for k in pool["keys"]])
    out = np.zeros(len(stamps))
    for c in range(len(stamps)):
        out[c] = np.log1p(np.abs(stamps[_others(top, c, LEADERS)] - stamps[c]).min() / 86400.0)
    return out


CANDIDATES[leader_days.__name__] = leader_days


def _rank(values):
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return 1.0 / (1.0 + ranks)


def _column(pool, name):
    from localmem.recall import learned_rank
    return pool["rows"][:, learned_rank.FEATURES.index(name)]


def max_sim_rank(pool):
    """Reciprocal rank of the candidate's MaxSim in the pool (vector, keyword and final have one)."""
    return _rank(_column(pool, "max_sim")) if len(pool["labels"]) else np.zeros(0)


def cosine_rank(pool):
    """Reciprocal rank of the candidate's cosine in the pool."""
    return _rank(_column(pool, "cosine")) if len(pool["labels"]) else np.zeros(0)


def final_gap10(pool):
    """The weighted score minus the tenth best in the pool (where R@10 is decided)."""
    final = pool["final"]
    if not len(final):
        return np.zeros(0)
    return final - np.sort(final)[::-1][min(9, len(final) - 1)]


@_guard
def leader_profile(pool, matrix):
    """Correlation over query tokens of c's matches with the top 3 others' best (negative:
    c matches where they do not)."""
    top = _leaders(pool, LEADERS)
    out = np.zeros(matrix.shape[1])
    for c in range(matrix.shape[1]):
        a, b = matrix[:, c], matrix[:, _others(top, c, LEADERS)].max(1)
        if a.std() > 1e-9 and b.std() > 1e-9:
            out[c] = np.corrcoef(a, b)[0, 1]
    return out


for _f in (max_sim_rank, cosine_rank, final_gap10, leader_profile):
    CANDIDATES[_f.__name__] = _f


def zero(pool):
    """Control: a constant column (never split on; it only changes LightGBM's column sampling)."""
    return np.zeros(len(pool["labels"]))


def noise(pool):
    """Control: uniform noise, the same for a pool on every run (seeded by its question)."""
    seed = sum(map(ord, pool["question"]["question"])) + len(pool["labels"])
    return np.random.default_rng(seed).random(len(pool["labels"]))


for _f in (zero, noise):
    CANDIDATES[_f.__name__] = _f
