"""What the trees see of threads (benchmarks/quality/thread_levers.py, union_cut.py's ``threadtop``
part): threads placed by their best weighted score, every member of the best T threads scored,
thread columns read from the pool alone, bad variants refused by name, and the report."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from benchmarks.quality import thread_levers, union_cut
from localmem.recall.learned_rank import FEATURES
from tests.two_shape_data import LOCOMO, random_pools, small_data

# pool positions 0..6: threads a, b, a, c, b, c, a; weighted scores unsorted
FINAL = np.array([0.5, 0.9, 0.7, 0.2, 0.3, 0.6, 0.1])
THREADS = ["a", "b", "a", "c", "b", "c", "a"]


def test_threads_are_placed_by_their_best_weighted_score_and_members_inside_them():
    place, inside, members = union_cut.thread_places(FINAL, THREADS)
    # b's best 0.9, a's 0.7, c's 0.6
    assert place.tolist() == [2, 1, 2, 3, 1, 3, 2]
    assert inside.tolist() == [2, 1, 1, 2, 2, 1, 3]
    assert members.tolist() == [3, 2, 3, 2, 2, 2, 3]


def test_the_thread_top_part_scores_every_member_of_the_best_threads_in_weighted_score_order():
    pool = {"final": FINAL, "rows": np.zeros((7, len(FEATURES))), "threads": THREADS}
    assert union_cut.scored_positions(pool, "1+threadtop:1").tolist() == [1, 4]
    assert union_cut.scored_positions(pool, "1+threadtop:2").tolist() == [1, 2, 0, 4, 6]
    assert union_cut.scored_positions(pool, "3+threadtop:1").tolist() == [1, 2, 5, 4]
    assert union_cut.scored_positions(pool, "1+threadtop:9").tolist() == np.argsort(-FINAL).tolist()


@pytest.mark.parametrize("text", ["30+threadtop", "30+threadtop:0", "30+threadtop:x"])
def test_a_thread_top_part_without_a_count_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        union_cut.read_cut(text)


def test_the_thread_columns_read_the_pool_s_scores_and_threads_only():
    columns = thread_levers.thread_columns(FINAL, THREADS)
    assert columns.shape == (7, len(thread_levers.THREAD_COLUMNS))
    by_name = dict(zip(thread_levers.THREAD_COLUMNS, columns.T))
    assert by_name["thread_place"].tolist() == [2, 1, 2, 3, 1, 3, 2]
    assert by_name["place_in_thread"].tolist() == [2, 1, 1, 2, 2, 1, 3]
    assert by_name["thread_members"].tolist() == [3, 2, 3, 2, 2, 2, 3]
    assert by_name["thread_in_top10"].tolist() == [3, 2, 3, 2, 2, 2, 3]  # 7 candidates: all in the top 10
    # second best less the pool's best (0.9): a 0.5, b 0.3, c 0.2
    assert by_name["thread_second_gap"].round(6).tolist() == [-0.4, -0.6, -0.4, -0.7, -0.6, -0.7, -0.4]
    alone = thread_levers.thread_columns(np.array([0.4, 0.8]), ["x", "y"])  # no second member: the pool's lowest
    assert alone[:, 4].round(6).tolist() == [-0.4, -0.4]
    assert thread_levers.thread_columns(np.zeros(0), []).shape == (0, len(thread_levers.THREAD_COLUMNS))


def test_the_thread_columns_count_only_the_ten_best_by_weighted_score():
    final = np.arange(12, 0, -1) / 12.0  # positions in weighted-score order
    threads = ["a"] * 9 + ["b"] * 3  # b's members are 10th, 11th and 12th
    in_top = thread_levers.thread_columns(final, threads)[:, thread_levers.THREAD_COLUMNS.index("thread_in_top10")]
    assert in_top.tolist() == [9] * 9 + [1] * 3


def test_the_session_columns_are_each_signal_less_its_best_in_the_candidate_s_thread():
    rows = np.zeros((4, len(FEATURES)))
    rows[:, FEATURES.index("cosine")] = [0.5, 0.9, 0.2, 0.4]
    rows[:, FEATURES.index("max_sim")] = [0.1, 0.3, 0.7, 0.7]
    columns = thread_levers.session_columns(rows, ["a", "b", "a", "b"])
    by_name = dict(zip(thread_levers.SESSION_SIGNALS, columns.T))
    assert by_name["cosine"].round(6).tolist() == [0.0, 0.0, -0.3, -0.5]
    assert by_name["max_sim"].round(6).tolist() == [-0.6, -0.4, 0.0, 0.0]
    assert by_name["keyword"].tolist() == [0.0] * 4  # a signal all alike is 0 everywhere
    wide = thread_levers.widened([{"rows": rows, "final": rows[:, 3], "threads": ["a", "b", "a", "b"]}],
                                 frozenset({"threads", "insession"}))[0]["rows"]
    assert wide.shape == (4, len(FEATURES) + len(thread_levers.THREAD_COLUMNS) + len(thread_levers.SESSION_SIGNALS))
    assert np.array_equal(wide[:, -len(thread_levers.SESSION_SIGNALS):], columns)


@pytest.mark.parametrize("text", ["30/nothing", "x/threads", "30+threadtop:0/oncut"])
def test_a_bad_variant_is_refused_naming_what_is_wrong(text):
    with pytest.raises(argparse.ArgumentTypeError):
        thread_levers.read_variant(text)


@pytest.mark.parametrize("argv, said", [(["--variants", "30,30/x"], "--variants"), (["--members", "0"], "--members"),
                                        (["--seeds", "-1"], "--seeds"), (["--lme-weight", "0"], "--lme-weight")])
def test_the_script_refuses_bad_options_by_name(argv, said, capsys):
    with pytest.raises(SystemExit):
        thread_levers.main(argv)
    assert said in capsys.readouterr().err


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_comparison_reports_each_variant_held_out_and_across_and_the_misses_by_thread(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    assert thread_levers.main([*small_data(tmp_path, 30, 6), "--variants", "5,5+threadtop:1/oncut,5/threads/insession",
                               "--seeds", "0,1", "--rounds", "3", "--threads"]) == 0
    printed = capsys.readouterr().out.splitlines()
    for variant in ("5", "5+threadtop:1/oncut", "5/threads/insession"):
        # two seeds and their mean held out, and one leave-one-dataset-out row
        assert sum(line.startswith(f"| {variant} |") for line in printed) == 2 + 1
        assert sum(line.startswith(f"| **{variant} mean** |") for line in printed) == 1
    base = [line for line in printed if line.startswith("| 5 | 0 |")][0].split("|")
    assert [c.strip() for c in base[-5:-1]] == ["0"] * 4  # the base moves nothing against itself
    assert any(line.startswith("Misses whose thread is among the pool's T best threads") for line in printed)
    header = [line for line in printed if line.startswith("| question | turn |")][0]
    assert header.rstrip(" |").endswith("held-out place")
    assert printed[-1].startswith("30 LoCoMo questions, 6 LongMemEval questions (6 instances")


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_a_seed_group_averages_its_members(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    assert thread_levers.main([*small_data(tmp_path, 30, 6), "--variants", "5", "--seeds", "1", "--members", "2",
                               "--rounds", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("| 5 | 2-3 |") for line in printed)
    assert printed[-1].split("; ")[-2] == "seed groups 2-3"


def test_a_seed_group_s_trees_are_its_members_raw_scores_averaged():
    pytest.importorskip("lightgbm")
    pools = random_pools(3, ["t"] * 12)
    runs = thread_levers.Runs(pools, argparse.Namespace(rounds=5, learning_rate=0.3, lme_weight=1))
    rows = pools[0]["rows"]
    one, two = (runs.predictor("30", frozenset(), (seed,), ("fold", 0))(rows) for seed in (0, 1))
    assert not np.allclose(one, two)  # LightGBM samples rows and features per round: the seeds' trees differ
    both = runs.predictor("30", frozenset(), (0, 1), ("fold", 0))(rows)
    assert np.allclose(both, (one + two) / 2)
