"""Novelty against the pool's leaders as columns for the learned ranking's trees
(benchmarks/quality/feedback_features.py, branch novelty14)."""

from __future__ import annotations

import numpy as np

from benchmarks.quality import feedback_features as ff


def _pool():
    # Leaders 0, 1, 2 (by final) about one topic; 3 repeats leader 1; 4 says something else.
    vectors = np.array([[1.0, 0.1, 0.0], [1.0, 0.0, 0.1], [0.9, 0.2, 0.0], [1.0, 0.0, 0.1], [0.0, 0.0, 1.0]])
    final = np.array([0.9, 0.8, 0.7, 0.3, 0.2])
    cosine = np.array([0.6, 0.55, 0.5, 0.4, 0.4])
    return vectors, cosine, final


def test_a_candidate_repeating_a_leader_is_least_novel_one_saying_something_else_most():
    nov_max, margin, rank = ff.novelty_columns(*_pool()).T
    assert nov_max[3] > 0.999  # the same text as leader 1
    assert nov_max[4] < 0.2
    # Same cosine to the query: the novel one's margin and rank are above the repeat's.
    assert margin[4] > margin[3] and rank[4] > rank[3]
    assert rank.max() == 1.0 and rank[int(np.argmax(margin))] == 1.0
    assert np.allclose(margin, _pool()[1] - nov_max)


def test_a_leader_is_measured_against_the_other_leaders_never_itself():
    vectors, cosine, final = _pool()
    vectors = vectors.copy()
    vectors[0] = [0.0, 1.0, 0.0]  # the best candidate now unlike every other
    nov_max = ff.novelty_columns(vectors, cosine, final)[:, 0]
    assert nov_max[0] < 0.3  # not 1.0, its cosine to itself
    # Leader 1's leaders are 0, 2 and 3 (the fourth): 3 repeats it.
    assert nov_max[1] > 0.999
    # A candidate outside the leaders is compared with the three leaders only (3 is no leader of 4).
    assert np.isclose(nov_max[4], max(float(vectors[j] @ vectors[4] / np.linalg.norm(vectors[j])) for j in (0, 1, 2)))


def test_a_pool_of_one_has_no_leaders_and_gets_zeros():
    out = ff.novelty_columns(np.ones((1, 3)), np.array([0.5]), np.array([1.0]))
    assert out.shape == (1, len(ff.NOVELTY)) and not out.any()


def test_each_novelty_variant_adds_its_one_column_beside_the_features():
    pools = [{"rows": np.zeros((2, 2))}]
    extra = [np.arange(2 * len(ff.COLUMNS), dtype=float).reshape(2, len(ff.COLUMNS))]
    for name, column in (("nov-max", "nov_max"), ("nov-margin", "nov_margin"), ("nov-rank", "nov_rank")):
        rows = ff.with_columns(pools, extra, ff.VARIANTS[name])[0]["rows"]
        assert rows.shape == (2, 3) and (rows[:, 2] == extra[0][:, ff.COLUMNS.index(column)]).all()
