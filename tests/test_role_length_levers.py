"""The hand-set speaker and length levers (benchmarks/quality/role_length_levers.py): what they
add to the weighted score, and the run end to end on small data with folds held out."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality import role_length_levers
from localmem.recall.learned_rank import FEATURES
from tests.two_shape_data import LOCOMO, small_data


def pool(rows: dict[str, list[float]], final: list[float]) -> dict:
    matrix = np.zeros((len(final), len(FEATURES)))
    for name, values in rows.items():
        matrix[:, FEATURES.index(name)] = values
    return {"rows": matrix, "final": np.array(final)}


def test_the_speaker_term_follows_whom_the_question_is_about():
    roles = {"role_user": [1, 0, 0], "role_assistant": [0, 1, 0]}
    about_me = pool({**roles, "query_self": [1, 1, 1]}, [0.5, 0.5, 0.5])
    assert role_length_levers.speaker_scores(about_me, 0.1).tolist() == [0.6, 0.5, 0.5]
    to_you = pool({**roles, "query_self": [1, 1, 1], "query_assistant": [1, 1, 1]}, [0.5, 0.5, 0.5])
    assert role_length_levers.speaker_scores(to_you, 0.1).tolist() == [0.5, 0.6, 0.5]  # no role: no term


def test_the_length_term_lowers_long_memories_against_the_pool_median():
    scores = role_length_levers.length_scores(pool({"log_chars": [3.0, 5.0, 7.0]}, [1.0, 1.0, 1.0]), 0.1)
    assert scores.tolist() == pytest.approx([1.2, 1.0, 0.8])


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_run_reports_each_value_and_the_held_out_choice(tmp_path, capsys):
    assert role_length_levers.main(small_data(tmp_path, 20, 5)) == 0
    printed = capsys.readouterr().out
    assert printed.count("| speaker b = ") == len(role_length_levers.SPEAKER)
    assert printed.count("| length a = ") == len(role_length_levers.LENGTH)
    assert "| speaker b, chosen on the other folds (" in printed
    assert "| length a, chosen on the other folds (" in printed
    assert "5 LongMemEval questions (5 instances" in printed
