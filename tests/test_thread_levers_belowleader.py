"""The session columns below the thread's leader (thread_levers.py's ``/belowleader``): each thread's leader
(its best weighted score, the first in pool order on a tie) gets a lone member's columns (0), every other member
the ``/insession`` columns, and the flag is read, refused when misspelt, and widens the pools by its own columns."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from benchmarks.quality import thread_levers
from localmem.recall.learned_rank import FEATURES
from tests.two_shape_data import LOCOMO, small_data

# pool positions 0..5: threads a, b, a, b, c, a; b's two members tie on weighted score
FINAL = np.array([0.4, 0.8, 0.6, 0.8, 0.1, 0.2])
THREADS = ["a", "b", "a", "b", "c", "a"]
N_SESSION = len(thread_levers.SESSION_SIGNALS)


def rows_with(cosine: list[float], max_sim: list[float]) -> np.ndarray:
    rows = np.zeros((len(cosine), len(FEATURES)))
    rows[:, FEATURES.index("cosine")] = cosine
    rows[:, FEATURES.index("max_sim")] = max_sim
    return rows


def test_a_thread_s_leader_is_its_best_weighted_score_and_the_first_in_pool_order_on_a_tie():
    assert thread_levers.thread_leaders(FINAL, THREADS).tolist() == [False, True, True, False, True, False]
    assert thread_levers.thread_leaders(list(FINAL), THREADS).tolist() == [False, True, True, False, True, False]
    assert thread_levers.thread_leaders(np.zeros(0), []).tolist() == []


def test_the_leader_gets_a_lone_member_s_columns_and_the_others_keep_the_in_session_ones():
    # the leader of a (position 2) is not the best of a on cosine: /insession gives it -0.3, /belowleader 0
    rows = rows_with([0.9, 0.5, 0.6, 0.7, 0.3, 0.2], [0.1, 0.9, 0.4, 0.2, 0.8, 0.5])
    inside = thread_levers.session_columns(rows, THREADS)
    below = thread_levers.below_leader_columns(rows, FINAL, THREADS)
    cosine, max_sim = (thread_levers.SESSION_SIGNALS.index(n) for n in ("cosine", "max_sim"))
    assert inside[2, cosine] == pytest.approx(-0.3) and inside[3, cosine] == pytest.approx(0.0)
    leaders = thread_levers.thread_leaders(FINAL, THREADS)
    assert np.array_equal(below[leaders], np.zeros((3, N_SESSION)))
    assert np.array_equal(below[~leaders], inside[~leaders])
    # the tie's second member (position 3) keeps its own: cosine its thread's best (0), max_sim 0.2 - 0.9
    assert below[3, max_sim] == pytest.approx(-0.7)
    # a lone member (thread c) reads 0 under both: the leader is seen as such a candidate
    alone = thread_levers.session_columns(rows[[2]], ["a"])
    assert np.array_equal(below[2], alone[0])


def test_below_leader_adds_its_own_columns_after_the_features_row():
    rows = rows_with([0.9, 0.5, 0.6, 0.7, 0.3, 0.2], [0.1, 0.9, 0.4, 0.2, 0.8, 0.5])
    pool = {"rows": rows, "final": FINAL, "threads": THREADS}
    below = thread_levers.widened([pool], frozenset({"belowleader"}))[0]["rows"]
    assert below.shape == (6, len(FEATURES) + N_SESSION)
    assert np.array_equal(below[:, :len(FEATURES)], rows)
    assert np.array_equal(below[:, len(FEATURES):], thread_levers.below_leader_columns(rows, FINAL, THREADS))
    both = thread_levers.widened([pool], frozenset({"insession", "belowleader"}))[0]["rows"]
    assert both.shape == (6, len(FEATURES) + 2 * N_SESSION)
    runs = thread_levers.Runs([pool], argparse.Namespace())
    assert runs.pools(frozenset({"belowleader"}))[0]["rows"].shape[1] == len(FEATURES) + N_SESSION
    assert not np.array_equal(runs.pools(frozenset({"belowleader"}))[0]["rows"],
                              runs.pools(frozenset({"insession"}))[0]["rows"])


def test_the_flag_is_read_and_a_misspelt_one_refused_by_name():
    assert thread_levers.read_variant("30+threadtop:4/belowleader") == ("30+threadtop:4", frozenset({"belowleader"}))
    with pytest.raises(argparse.ArgumentTypeError, match="belowleaders"):
        thread_levers.read_variant("30/belowleaders")


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_comparison_reports_a_below_leader_variant(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    assert thread_levers.main([*small_data(tmp_path, 30, 6), "--variants", "5,5+threadtop:1/belowleader",
                               "--seeds", "0", "--rounds", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("| 5+threadtop:1/belowleader |") for line in printed) == 1 + 1
    assert sum(line.startswith("| **5+threadtop:1/belowleader mean** |") for line in printed) == 1
