"""benchmarks/quality/window_reach.py: how much of a long memory the model's window reaches, and
where the evidence sits in it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.quality import train_rank_two_shapes, window_reach
from localmem.recall import learned_rank

FILLER = "The assistant explains general background about many unrelated topics in detail. "


def lme_instance(question_id: str, evidence: str) -> dict:
    return {
        "question_id": question_id, "question_type": "single-session-user",
        "question": "What colour is my bicycle?", "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "teal", "answer_session_ids": ["s-a"],
        "haystack_session_ids": ["s-a"], "haystack_dates": ["2023/05/01 (Mon) 09:00"],
        "haystack_sessions": [[
            {"role": "user", "content": evidence, "has_answer": True},
            {"role": "assistant", "content": "Nice.", "has_answer": False},
        ]],
    }


def test_the_misses_are_read_back_from_the_training_scripts_own_listing():
    instance = lme_instance("q1", "I ride a teal bicycle.")
    instance["haystack_sessions"][0].append({"role": "user", "content": "My bicycle is teal too.",
                                             "has_answer": True})
    keys = [f"9:{i}" for i in range(10)] + ["0:0", "0:2"]  # ten other turns ahead of the evidence
    pool = {"shape": "lme", "id": "q1", "kind": "single-session-user", "question": instance["question"],
            "keys": keys, "threads": [None] * len(keys), "final": np.linspace(1.0, 0.1, len(keys)),
            "rows": np.zeros((len(keys), len(learned_rank.FEATURES))),
            "truth": {"turns": {"0:0", "0:2"}}}
    lines = train_rank_two_shapes.held_out_misses([pool], [instance], lambda p: None, 0.0)
    assert window_reach.parse_misses_text("\n".join(["some table", *lines])) == {"q1": ["0:0", "0:2"]}
    # two seeds' output one after the other: each miss once
    assert window_reach.parse_misses_text("\n".join(lines + lines)) == {"q1": ["0:0", "0:2"]}


def test_options_that_read_the_misses_need_them(tmp_path, capsys):
    for argv in (["--pools", str(tmp_path)], ["--sentences"]):
        with pytest.raises(SystemExit):
            window_reach.main(argv)
        assert "give --misses FILE" in capsys.readouterr().err
    empty = tmp_path / "misses.txt"
    empty.write_text("| a table | without misses |\n")
    with pytest.raises(SystemExit):
        window_reach.main(["--misses", str(empty)])
    assert "lists no missed turn" in capsys.readouterr().err


def test_rank_of_counts_strictly_larger_values():
    values = np.array([0.5, 0.9, 0.5, 0.1])
    assert [window_reach.rank_of(values, i) for i in range(4)] == [2, 1, 2, 4]


def test_sentences_are_split_at_ends_and_lines():
    assert window_reach.sentences_of("One. Two?\nThree") == ["One.", "Two?", "Three"]
    assert window_reach.sentences_of(" \n ") == []


@pytest.mark.model
def test_a_memory_and_an_answer_past_the_window_are_counted(tmp_path, capsys):
    locomo_file = tmp_path / "locomo.json"
    locomo_file.write_text(json.dumps([{"conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hello there."}]}, "qa": []}]))
    late = FILLER * 22 + "By the way, my bicycle is teal."  # one part (< 2,000 characters), ~300 word pieces
    assert len(late) < 2000
    early = "My bicycle is teal. " + FILLER * 2
    lme_file = tmp_path / "lme.json"
    lme_file.write_text(json.dumps({"instances": [lme_instance("late", late), lme_instance("early", early)]}))
    assert window_reach.main(["--locomo", str(locomo_file), "--lme", str(lme_file), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "window: 254 word pieces" in out
    # LoCoMo's one short memory fits; of LongMemEval's, the long user turn does not
    locomo_row = next(line for line in out.splitlines() if line.startswith("| LoCoMo dev |"))
    assert locomo_row.split("|")[2].strip() == "1" and locomo_row.split("|")[4].strip() == "0.000"
    assert "| LongMemEval dev, user | 2 | " in out
    row = next(line for line in out.splitlines() if line.startswith("| all | 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # two evidence turns: one in a part longer than the window, its answer past it; both found by the string
    assert cells[2:5] == ["1", "1", "2"]
    assert int(cells[6]) > 254
