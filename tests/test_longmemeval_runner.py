"""The LongMemEval runner (benchmarks/quality/longmemeval.py): turns stored as capture stores them,
evidence counted per turn and per session, BM25 beside localmem in the same run."""

from __future__ import annotations

from benchmarks.quality import longmemeval
from localmem import Config

LONG_ANSWER = ("Here is a long and generic answer about gardening. " * 60).strip()


def instance(question_id: str = "q1") -> dict:
    return {
        "question_id": question_id, "question_type": "single-session-user",
        "question": "What breed is my dog Biscuit?", "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "a beagle", "answer_session_ids": ["s-b"],
        "haystack_session_ids": ["s-a", "s-b"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 14:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "How do I grow tomatoes?", "has_answer": False},
             {"role": "assistant", "content": LONG_ANSWER, "has_answer": False}],
            [{"role": "user", "content": "My dog Biscuit is a beagle and loves walks.", "has_answer": True},
             {"role": "assistant", "content": "Beagles do love long walks!", "has_answer": False},
             {"role": "user", "content": "  \u0000  ", "has_answer": False}],
        ],
    }


def test_turns_are_stored_as_capture_stores_them():
    items = list(longmemeval.memory_items(instance()))
    long_parts = [i for i in items if i["metadata"]["turn"] == "0:1"]
    assert len(long_parts) == 2 and all(len(p["content"]) <= 2000 for p in long_parts)
    assert [p["metadata"]["part"] for p in long_parts] == [1, 2]
    first = items[0]
    assert first["metadata"] == {"session": "s-a", "role": "user", "turn": "0:0"}
    assert first["tags"] == ["session:s-a"]
    assert first["timestamp"].startswith("2023-05-01T09:00:00")
    # a turn of only NUL and blanks becomes U+FFFD, kept verbatim as capture keeps it
    assert items[-1]["content"] == "\ufffd" and items[-1]["metadata"]["turn"] == "1:2"


def test_metrics_count_turns_once_and_sessions_by_first_appearance():
    session_of = {"0:0": "a", "0:1": "a", "1:0": "b", "1:1": "b"}
    ranked = ["0:1", "0:1", "1:1", "1:0"]  # two parts of one turn count once
    m = longmemeval.metrics(ranked, session_of, {"1:0"}, {"b"})
    assert m["MRR"] == 1 / 3 and m["R@5"] == 1.0
    assert m["any@5"] == 1.0 and m["all@5"] == 1.0
    missed = longmemeval.metrics(["0:0"], session_of, {"1:0", "1:1"}, {"b", "c"})
    assert missed == {"R@5": 0.0, "R@10": 0.0, "MRR": 0.0, "any@5": 0.0, "all@5": 0.0}


def test_run_reports_bm25_and_localmem_and_sets_abstentions_apart(tmp_path):
    config = Config.from_env({}).with_changes(track_access=False)
    result = longmemeval.run([instance(), instance("q2_abs")], "hash", config, log=lambda _: None)
    assert len(result["rows"]["bm25"]) == 1 and len(result["rows"]["localmem"]) == 1
    assert len(result["abstentions"]["localmem"]) == 1
    bm25 = result["rows"]["bm25"][0][1]
    assert bm25["R@5"] == 1.0 and bm25["any@5"] == 1.0  # "Biscuit" is in the evidence turn only
    assert result["ingest_memories"] == 2 * 6
    lines = longmemeval.report(result)
    assert any(line.startswith("| localmem | overall | 1 |") for line in lines)
    assert any("abstention questions (1)" in line for line in lines)


def test_without_threads_the_session_is_left_out_of_tags_and_metadata():
    items = list(longmemeval.memory_items(instance(), threads=False))
    assert items[0]["metadata"] == {"role": "user", "turn": "0:0"} and items[0]["tags"] == []
    assert len(items) == len(list(longmemeval.memory_items(instance())))


def test_the_threads_ablation_adds_both_rows_for_answerable_questions_only():
    config = Config.from_env({}).with_changes(track_access=False)
    result = longmemeval.run([instance(), instance("q2_abs")], "hash", config, log=lambda _: None,
                             threads_ablation=True)
    for name in (longmemeval.NO_THREADS, longmemeval.NO_THREAD_KEYWORDS):
        assert len(result["rows"][name]) == 1
        assert set(result["rows"][name][0][1]) == {"R@5", "R@10", "MRR", "any@5", "all@5"}
    assert any(line.startswith(f"| {longmemeval.NO_THREADS} | overall | 1 |")
               for line in longmemeval.report(result))


def test_a_turn_bm25_finds_and_localmem_does_not_is_listed_with_its_scores():
    inst = instance()
    response = {"results": [
        {"memory": {"metadata": {"turn": f"0:{n % 2}", "role": "user"}}, "final_score": 1.0 - n / 100,
         "score_components": {"vector": 0.5, "keyword": 0.0}} for n in range(12)]}
    lines = longmemeval.bm25_only_misses(inst, ["1:0", "0:0"], response, {"1:0"})
    assert lines[0].startswith("q1 (single-session-user)")
    assert "1:0 user, 43 chars, BM25 rank 1, not in localmem's first 40" in lines[1]
    assert longmemeval.bm25_only_misses(inst, ["0:0"], response, {"0:0"}) == []  # localmem has it


def test_a_question_is_asked_after_every_turn_stored_for_it():
    inst = instance()
    assert longmemeval.asked_at(inst).isoformat() == "2023-06-01T10:00:00+00:00"  # the question's date
    inst["question_date"] = "2023/05/20 (Sat) 09:00"  # the same day as the last session, hours before it
    assert longmemeval.asked_at(inst).isoformat() == "2023-05-20T14:30:03+00:00"  # after its third turn
    config = Config.from_env({}).with_changes(track_access=False)
    store, _, _ = longmemeval.build_store(inst, "hash", config)
    with store:
        ranked, response = longmemeval.localmem_answer(store, inst)
    assert "1:0" in ranked  # the evidence said that day is not hidden as not yet valid
    assert response["state_filter"]["suppressed_count"] == 0
