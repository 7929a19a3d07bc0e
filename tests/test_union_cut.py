"""The union cut compared held out (benchmarks/quality/union_cut.py): which candidates the trees
score under ``TOP[+FEATURE:K]...``, the cut's text refused by name when bad, and its report."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from benchmarks.quality import union_cut
from localmem.recall.learned_rank import FEATURES
from tests.two_shape_data import LOCOMO, small_data


def pool_with(final: list[float], columns: dict[str, list[float]], threads: list[str] | None = None) -> dict:
    rows = np.zeros((len(final), len(FEATURES)))
    for name, values in columns.items():
        rows[:, FEATURES.index(name)] = values
    return {"final": np.array(final), "rows": rows, "threads": threads or [str(i) for i in range(len(final))]}


def test_the_cut_scores_the_top_by_weighted_score_and_the_top_of_each_named_signal():
    # weighted scores fall with the position; the pooled cosine ranks 5 and 4 first
    pool = pool_with([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], {"cosine": [0.1, 0.2, 0.0, 0.3, 0.8, 0.9],
                                                      "keyword_rank": [1.0, 0.5, 0.2, 0.1, 0.3, 0.25]})
    assert union_cut.scored_positions(pool, "2").tolist() == [0, 1]
    assert union_cut.scored_positions(pool, "2+cosine:2").tolist() == [0, 1, 4, 5]
    # a signal whose best are already in the top adds nothing; positions come in weighted-score order
    assert union_cut.scored_positions(pool, "2+keyword_rank:2").tolist() == [0, 1]
    assert union_cut.scored_positions(pool, "2+keyword_rank:3+cosine:1").tolist() == [0, 1, 4, 5]


def test_the_thread_reach_adds_each_thread_s_best_by_weighted_score():
    # threads a, a, b, b, c: the feature rows say how far each is below its thread's best
    pool = pool_with([0.9, 0.8, 0.7, 0.6, 0.5], {"thread_gap": [0.0, -0.1, 0.0, -0.1, 0.0]})
    assert union_cut.scored_positions(pool, "1+thread").tolist() == [0, 2, 4]


def test_the_learned_component_goes_to_the_scored_positions_only():
    pool = pool_with([0.9, 0.8, 0.7, 0.6], {"cosine": [0.0, 0.0, 0.0, 1.0]})
    ones = lambda rows: np.full(len(rows), 60.0)  # noqa: E731 - the logistic of 60 is 1
    added = union_cut.union_scores(ones, pool, 1.0, "1+cosine:1") - pool["final"]
    assert added.round(6).tolist() == [1.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("text", ["x", "0", "30+nothing:5", "30+cosine", "30+cosine:0", "30+thread:2"])
def test_a_bad_cut_is_refused_naming_what_is_wrong(text):
    with pytest.raises(argparse.ArgumentTypeError):
        union_cut.read_cut(text)


@pytest.mark.parametrize("argv, said", [(["--cuts", "30,30+cosine:x"], "--cuts"), (["--cuts", "0,30"], "--cuts"),
                                        (["--seeds", "-1"], "--seeds"), (["--lme-weight", "0"], "--lme-weight")])
def test_the_script_refuses_bad_options_by_name(argv, said, capsys):
    with pytest.raises(SystemExit):
        union_cut.main(argv)
    assert said in capsys.readouterr().err


def test_a_plain_cut_scores_the_top_best_by_weighted_score_and_no_other():
    pool = pool_with([0.1, 0.9, 0.5, 0.7], {"cosine": [1.0, 0.0, 0.0, 0.0]})
    assert union_cut.scored_positions(pool, "2").tolist() == [1, 3]
    assert union_cut.scored_positions(pool, "9").tolist() == [1, 3, 2, 0]  # a cut past the pool scores it all
    training = union_cut.subset({**pool, "labels": np.array([1.0, 0.0, 1.0, 0.0])}, "2")
    assert training["rows"][:, FEATURES.index("cosine")].tolist() == [0.0, 0.0]
    assert training["labels"].tolist() == [0.0, 0.0] and pool["rows"].shape[0] == 4  # the recorded pool left whole


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_comparison_reports_every_cut_held_out_chosen_per_fold_and_across_sets(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    assert union_cut.main([*small_data(tmp_path, 30, 6), "--cuts", "5,5+cosine:3", "--seeds", "0",
                           "--rounds", "3", "--signals"]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| 5 |") or line.startswith("| 5+cosine:3 |")]
    assert len(rows) == 2 * 2 + 2  # a seed and the mean per cut, and one leave-one-dataset-out row per cut
    base = [line for line in rows if line.startswith("| 5 | 5 / ")][0].split("|")
    assert [c.strip() for c in base[-5:-1]] == ["0"] * 4  # the base moves nothing against itself
    assert "The cut chosen for each fold on the other four" in printed
    assert "FTS5 BM25 (same memories)" in printed and "| weighted score alone |" in printed
    assert "30 LoCoMo questions, 6 LongMemEval questions (6 instances" in printed


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_trees_trained_on_what_each_cut_scores_are_reported_as_such(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    assert union_cut.main([*small_data(tmp_path, 30, 6), "--cuts", "5,30", "--seeds", "0,1",
                           "--rounds", "3", "--train-on-cut"]) == 0
    printed = capsys.readouterr().out
    assert "each cut's trees trained on what it scores" in printed
    # per cut: two seeds and their mean held out, and one leave-one-dataset-out row
    assert sum(line.startswith("| 5 |") for line in printed.splitlines()) == 2 + 1 + 1
    assert "to four places (LoCoMo R@10 / LME turn R@10 / LME any@5 lowest seed): 5 0." in printed
