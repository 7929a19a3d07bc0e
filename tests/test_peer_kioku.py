"""benchmarks/speed/peer_kioku.py's own logic, without kioku-lite installed: the turn-taking, the
plan both workers read, kioku-lite's answers as turns, the scoring, the result tables, the worker's
line protocol and the refusals (a missing or unfit peer venv, bad options)."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from benchmarks.quality.locomo import memory_item, turns_of
from benchmarks.speed import peer_kioku


def sample(conv_turns: list[list[str]], questions: list[tuple[str, list[str]]]) -> dict:
    conversation = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for number, texts in enumerate(conv_turns, start=1):
        conversation[f"session_{number}_date_time"] = f"1:56 pm on {number} May, 2023"
        conversation[f"session_{number}"] = [
            {"speaker": "Ann" if n % 2 == 0 else "Bob", "dia_id": f"D{number}:{n + 1}", "text": text}
            for n, text in enumerate(texts)]
    return {"conversation": conversation,
            "qa": [{"question": q, "evidence": evidence, "category": 4, "answer": "x"} for q, evidence in questions]}


def test_the_sides_take_turns_going_first():
    orders = [peer_kioku.turn_order(turn) for turn in range(6)]
    assert orders[0] == ["localmem", "kioku"] and orders[1] == ["kioku", "localmem"]
    assert sum(order[0] == "kioku" for order in orders) == 3


def test_a_text_shared_by_turns_stands_for_each_of_them_at_its_rank():
    memories = [{"content": "Ann: hi", "key": "conv:0/D1:1"}, {"content": "Bob: the lake", "key": "conv:0/D1:2"},
                {"content": "Ann: hi", "key": "conv:1/D1:1"}]
    keys = peer_kioku.hash_keys(memories)
    assert len(keys) == 2
    ranked = peer_kioku.expand([peer_kioku.content_hash("Bob: the lake"), "unknown",
                                peer_kioku.content_hash("Ann: hi")], keys)
    assert ranked == ["conv:0/D1:2", "conv:0/D1:1", "conv:1/D1:1"]


def test_scores_count_the_first_k_and_the_first_hit():
    ranked = [f"conv:0/D1:{n}" for n in range(1, 13)]
    got = peer_kioku.scores(ranked, {"conv:0/D1:3", "conv:0/D1:12"})
    assert got == {"R@10": 0.5, "MRR": pytest.approx(1 / 3)}
    assert peer_kioku.scores(ranked, {"conv:1/D1:3"}) == {"R@10": 0.0, "MRR": 0.0}


def test_paired_ratios_refuse_lists_of_different_lengths_and_skip_a_zero():
    assert peer_kioku.paired_ratios([2.0, 3.0, 4.0], [1.0, 0.0, 2.0]) == [2.0, 2.0]
    with pytest.raises(ValueError, match="differ in length"):
        peer_kioku.paired_ratios([1.0], [1.0, 2.0])


def times_of() -> dict:
    return {"unscoped": {"localmem": [[20.0, 30.0, 40.0], [10.0, 10.0, 10.0]],
                         "kioku": [[10.0, 10.0, 10.0], [10.0, 5.0, 20.0]]},
            "scoped": {"localmem": [[15.0, 15.0, 15.0], [5.0, 5.0, 5.0]]}}


def test_the_ratio_table_has_a_row_per_round_and_one_for_all():
    rows = peer_kioku.ratio_rows(times_of(), "wall")
    assert rows[2] == "| 1 | 3.000 | 3.000 | 1.500 | 1.500 |"
    # round 2: per question 1.0, 2.0, 0.5 -> median 1.0; p50 10 / 10.
    assert rows[3] == "| 2 | 1.000 | 1.000 | 0.500 | 0.500 |"
    # all six pairs: 2, 3, 4, 1, 2, 0.5 -> median 2.0; p50 15 / 10.
    assert rows[4] == "| all | 2.000 | 1.500 | 1.250 | 1.000 |"
    assert len(rows) == 5


def test_the_latency_table_names_each_side_and_mode_over_every_round():
    rows = peer_kioku.latency_rows(times_of(), times_of())
    assert rows[2].startswith("| localmem, unscoped | 15.00 | ")
    assert rows[3].startswith("| kioku-lite, unscoped | 10.00 | ")
    assert rows[4].startswith("| localmem, scoped | 10.00 | ") and rows[4].endswith("| 6 |")


def test_the_quality_table_is_the_mean_per_question_and_refuses_a_short_list():
    evidence = [{"a"}, {"b", "c"}]
    rows = peer_kioku.quality_rows({"x": [["a"], ["z", "b"]]}, evidence)
    assert rows[2] == "| x | 0.7500 | 0.7500 | 2 |"
    with pytest.raises(ValueError, match="1 answers for 2 questions"):
        peer_kioku.quality_rows({"x": [["a"]]}, evidence)


def test_a_missing_or_unfit_peer_venv_says_how_to_make_it(tmp_path):
    absent = str(tmp_path / "venv" / "bin" / "python")
    why = peer_kioku.peer_missing(absent)
    assert "missing" in why and "pip install kioku-lite==0.2.0" in why and "venv" in why
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    assert "cannot import kioku_lite" in peer_kioku.peer_missing(str(python), probe=lambda cmd: 1)
    no_extensions = peer_kioku.peer_missing(str(python), probe=lambda cmd: int(peer_kioku.LOADS_EXTENSIONS in cmd))
    assert "cannot load extensions" in no_extensions and "vector search" in no_extensions
    assert peer_kioku.peer_missing(str(python), probe=lambda cmd: 0) is None


def test_the_script_stops_with_the_reason_when_the_peer_is_missing(tmp_path, capsys):
    code = peer_kioku.main(["--store", str(tmp_path / "s.db"), "--peer-python", str(tmp_path / "none")])
    assert code == 2 and "kioku-lite's venv is missing" in capsys.readouterr().err


@pytest.mark.parametrize("option, message", [(["--every", "0"], "--every must be 1 or more"),
                                             (["--limit", "5"], "--limit must be 10 or more"),
                                             (["--gap", "-1"], "--gap must be 0 or more"),
                                             ([], "--store FILE is required")])
def test_bad_options_are_refused_by_name(option, message, capsys):
    with pytest.raises(SystemExit):
        peer_kioku.main(option)
    assert message in capsys.readouterr().err


def test_the_newest_export_of_the_model_is_used(tmp_path):
    model_folder = tmp_path / "model"
    model_folder.mkdir()
    (model_folder / "tokenizer.json").write_text("{}")
    for name, model in (("old", "all-MiniLM-L6-v2"), ("other", "bge-small"), ("new", "all-MiniLM-L6-v2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.onnx").write_text("")
        (tmp_path / name / "export.json").write_text(json.dumps({"model": model, "folder": str(model_folder)}))
    os.utime(tmp_path / "old" / "export.json", (1, 1))
    onnx, tokenizer = peer_kioku.find_export(tmp_path)
    assert onnx == tmp_path / "new" / "model.onnx" and tokenizer == model_folder / "tokenizer.json"
    with pytest.raises(SystemExit, match="no ONNX export"):
        peer_kioku.find_export(tmp_path / "other")


def test_the_plan_holds_locomos_memories_and_times_only_unseen_questions(tmp_path):
    data = [sample([["I swam in the lake", "Nice!"], ["We moved to Oslo"]],
                   [(f"question {n}?", ["D1:1"]) for n in range(6)]),
            sample([["I adopted a dog"]], [("Which pet?", ["D1:1"]), ("Where?", ["D9:9"])])]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    plan = peer_kioku.make_plan(str(path), every=2)
    contents = [memory_item(t, i)["content"] for i, s in enumerate(data) for t in turns_of(s)]
    assert [m["content"] for m in plan["memories"]] == contents
    assert plan["memories"][2]["key"] == "conv:0/D2:1" and plan["memories"][2]["event_time"] == "2023-05-02"
    # 7 questions with known evidence ("Where?" has none): every 2nd timed, the rest warm only.
    assert [q["question"] for q in plan["timed"]] == ["question 0?", "question 2?", "question 4?", "Which pet?"]
    assert [q["question"] for q in plan["warm"]] == ["question 1?", "question 3?", "question 5?"]
    assert plan["timed"][3]["evidence"] == ["conv:1/D1:1"] and plan["timed"][3]["conv_tag"] == "conv:1"


def test_a_worker_warms_on_unseen_questions_then_answers_each_line(monkeypatch, capsys):
    plan = {"warm": [{"question": "w"}], "timed": [{"question": "a"}, {"question": "b"}]}
    asked, encoded = [], []

    def recall(q, limit):
        asked.append((q["question"], limit))
        return [q["question"] + "-hit"]

    requests = [{"op": "recall", "mode": "unscoped", "i": 1, "limit": 20}, {"op": "encode", "i": 0},
                {"op": "vectors", "texts": ["t"]}]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(r) + "\n" for r in requests)))
    peer_kioku.serve(plan, {"unscoped": recall}, lambda text: encoded.append(text) or [0.6, 0.8], {"memories": 3})
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == {"ready": True, "memories": 3}
    assert asked == [("w", 20), ("b", 20)]
    assert lines[1]["ranked"] == ["b-hit"] and lines[1]["ms"] >= 0 and lines[1]["cpu"] >= 0
    assert lines[2]["ranked"] == [] and encoded[0] == "a ?"
    assert lines[3]["vectors"] == [[pytest.approx(0.6), pytest.approx(0.8)]]
