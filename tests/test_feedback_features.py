"""Pool-level feedback columns for the learned ranking's trees (benchmarks/quality/feedback_features.py)."""

from __future__ import annotations

import numpy as np

from benchmarks.quality import feedback_features as ff


def test_each_candidate_is_compared_with_the_best_others_a_leader_with_the_other_leaders():
    final = np.array([0.1, 0.9, 0.5, 0.8, 0.7, 0.6, 0.2, 0.3])
    leaders = ff.leaders_of(final, count=3)
    assert leaders[0] == [1, 3, 4]  # not a leader: the three best
    assert leaders[1] == [3, 4, 5]  # the best: the next three
    assert leaders[4] == [1, 3, 5]
    assert all(i not in chosen for i, chosen in enumerate(leaders))


def test_a_candidate_like_what_the_leaders_share_scores_above_one_unlike_it():
    # Five leaders around one direction; candidate 5 points the same way, candidate 6 elsewhere.
    rng = np.random.default_rng(0)
    topic = np.array([1.0, 0.0, 0.0, 0.0])
    leaders = [topic + 0.1 * rng.normal(size=4) for _ in range(5)]
    vectors = np.array(leaders + [topic + np.array([0, 0.2, 0, 0]), np.array([0.0, 0.0, 1.0, 0.0])])
    final = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.1, 0.1])
    terms = [{"garden", "tomato"}, {"garden", "seeds"}, {"tomato", "garden"}, {"seeds"}, {"garden"},
             {"garden", "tomato"}, {"car"}]
    columns = ff.feedback_columns(vectors, terms, query={"seeds"}, final=final)
    cosine, rank, share = columns.T
    assert cosine[5] > 0.9 > cosine[6]
    assert rank[5] > rank[6]
    # Shared terms: garden (4 leaders), tomato (2); seeds is the query's and is left out.
    assert share[5] == 1.0 and share[6] == 0.0
    assert share[3] == 0.0  # a leader holding only the query's term: its leaders share nothing it has


def test_rarer_shared_terms_weigh_more_and_nothing_is_shared_below_two_leaders():
    vectors = np.eye(7, 4, dtype=float) + 0.01
    final = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.1, 0.1])
    # "trip" is in every candidate of the pool (idf 0): holding only it is worth nothing.
    terms = [{"trip", "paris"}, {"trip", "paris"}, {"trip"}, {"trip"}, {"trip", "lonely"},
             {"trip", "paris"}, {"trip"}]
    share = ff.feedback_columns(vectors, terms, query=set(), final=final)[:, 2]
    assert share[5] == 1.0  # paris: the only shared term with weight
    assert share[6] == 0.0
    single = [{"a1"}, {"b1"}, {"c1"}, {"d1"}, {"e1"}, {"a1"}, {"b1"}]
    assert not ff.feedback_columns(vectors, single, query=set(), final=final)[:, 2].any()


def test_a_pool_of_one_has_no_leaders_and_gets_zeros():
    out = ff.feedback_columns(np.ones((1, 4)), [{"x"}], query=set(), final=np.array([1.0]))
    assert out.shape == (1, len(ff.FEEDBACK)) and not out.any()


def test_variants_add_their_columns_beside_the_features():
    pools = [{"rows": np.zeros((3, 2)), "x": 1}]
    extra = [np.arange(9, dtype=float).reshape(3, 3)]
    assert ff.with_columns(pools, extra, ())[0]["rows"].shape == (3, 2)
    vec = ff.with_columns(pools, extra, ff.VARIANTS["prf-vec"])[0]["rows"]
    assert vec.shape == (3, 4) and (vec[:, 2:] == extra[0][:, :2]).all()
    assert ff.with_columns(pools, extra, ff.VARIANTS["prf-all"])[0]["rows"].shape == (3, 5)
