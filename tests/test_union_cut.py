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


def test_the_script_refuses_a_bad_cut_by_the_option_s_name(capsys):
    with pytest.raises(SystemExit):
        union_cut.main(["--cuts", "30,30+cosine:x"])
    assert "--cuts" in capsys.readouterr().err


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
    assert "30 LoCoMo questions, 6 LongMemEval questions (6 instances" in printed
