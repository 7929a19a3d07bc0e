"""A gathering question's first results spread across threads (recall/thread_spread.py):
one session that talks about the subject at length must not crowd out the side remarks
other sessions made about it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from localmem import Config
from localmem.errors import ConfigError
from localmem.recall.learned_rank import TreeModel
from localmem.recall.thread_spread import (GATHERING_WORDS, PER_THREAD, SCORE_GAP, SPREAD_TOP, gathers,
                                           spread_order)

from test_learned_rank import model_dict, tree

GATHERING = "How many times did I bake sourdough bread in the past two months?"
SINGLE = "What sourdough bread did I bake?"


def flat_model() -> TreeModel:
    """A learned model for the hash embedder that keeps the weighted score's order (one
    constant leaf): the spread applies only when a learned model ranks the recall."""
    return TreeModel.from_dict(model_dict([tree(0, 0.0, 0.0, 0.0)]))


def crowded_store(factory, config: Config | None = None, learned: bool = True):
    """Session ``long`` holds twelve turns about baking sourdough bread; sessions ``a``–``d``
    each mention one bake in passing, among other things; and some unrelated turns."""
    store = factory(config=config) if config is not None else factory()
    if learned:
        store.learned_model = flat_model()
    items = []
    for n in range(12):
        items.append({"content": f"I bake sourdough bread; the sourdough bread bake step {n} is where the "
                                 f"sourdough bread gets its crust when I bake it",
                      "metadata": {"session": "long", "role": "user"},
                      "timestamp": f"2024-04-10T10:{n:02d}:00+00:00"})
    for name, day in zip("abcd", (3, 12, 19, 26)):
        items.append({"content": f"Planning the garden this weekend; also I did bake sourdough bread on "
                                 f"Sunday {name}, then we talked about tomatoes and fences",
                      "metadata": {"session": name, "role": "user"},
                      "timestamp": f"2024-03-{day:02d}T09:00:00+00:00"})
        for k in range(3):
            items.append({"content": f"Tomato varieties for session {name}, part {k}: cherry, plum, heirloom",
                          "metadata": {"session": name, "role": "assistant"},
                          "timestamp": f"2024-03-{day:02d}T09:0{k + 1}:00+00:00"})
    store.store_many(items)
    return store


def key(result: dict) -> tuple[str, str]:
    """A memory's identity across the two stores (ids are drawn afresh in each)."""
    return result["memory"]["content"], result["memory"]["timestamp"]


def session_of(result: dict) -> str:
    return result["memory"]["metadata"]["session"]


def side_remarks(results: list[dict]) -> int:
    return sum(1 for r in results if session_of(r) in "abcd" and "bake sourdough" in r["memory"]["content"])


def test_one_threads_turns_no_longer_crowd_out_four_sessions_side_remarks(memory_store_factory):
    spread = crowded_store(memory_store_factory)
    flat = crowded_store(memory_store_factory, Config(thread_spread=False))
    before = flat.recall(GATHERING, limit=SPREAD_TOP)["results"]
    after = spread.recall(GATHERING, limit=SPREAD_TOP)["results"]
    # Without the spread the long session takes the first ten (the case the step exists for) ...
    assert sum(session_of(r) == "long" for r in before) > PER_THREAD
    assert side_remarks(before) < 4
    # ... with it, PER_THREAD of its turns come first, then every side remark; the long session's
    # other turns take the places left, since the tomato turns score more than SCORE_GAP below them.
    assert [session_of(r) for r in after[:PER_THREAD]] == ["long"] * PER_THREAD
    assert side_remarks(after[PER_THREAD:PER_THREAD + 4]) == 4
    assert all(session_of(r) == "long" for r in after[PER_THREAD + 4:])
    assert after[0]["final_score"] - max(r["final_score"] for r in flat.recall(GATHERING, limit=30)["results"]
                                         if "Tomato" in r["memory"]["content"]) > SCORE_GAP
    scores = [r["final_score"] for r in after]
    assert scores == sorted(scores, reverse=True)  # the answer stays sorted by score


def test_the_moved_memories_say_so_and_the_kept_ones_are_untouched(memory_store_factory):
    spread = crowded_store(memory_store_factory)
    flat = crowded_store(memory_store_factory, Config(thread_spread=False))
    before = {key(r): r for r in flat.recall(GATHERING, limit=30)["results"]}
    answer = spread.recall(GATHERING, limit=30)
    moved = [r for r in answer["results"] if "thread_spread" in r["score_components"]]
    assert moved and all(session_of(r) == "long" for r in moved)
    assert answer["learned_rank"]["thread_spread"] == {"moved": len(moved)}
    assert "thread_spread" not in flat.recall(GATHERING, limit=30)["learned_rank"]
    for result in moved:
        lowered = result["score_components"]["thread_spread"]
        assert lowered < 0
        assert math.isclose(result["final_score"], before[key(result)]["final_score"] + lowered, abs_tol=1e-9)


def test_a_question_that_does_not_gather_is_ranked_as_before(memory_store_factory):
    spread = crowded_store(memory_store_factory)
    flat = crowded_store(memory_store_factory, Config(thread_spread=False))
    assert not gathers(SINGLE)
    first = spread.recall(SINGLE, limit=SPREAD_TOP)["results"]
    second = flat.recall(SINGLE, limit=SPREAD_TOP)["results"]
    assert [key(r) for r in first] == [key(r) for r in second]
    assert [r["final_score"] for r in first] == [r["final_score"] for r in second]
    assert all("thread_spread" not in r["score_components"] for r in first)
    assert "thread_spread" not in spread.recall(SINGLE, limit=SPREAD_TOP)["learned_rank"]


def test_without_the_learned_ranking_nothing_is_spread(memory_store_factory):
    store = crowded_store(memory_store_factory, learned=False)
    answer = store.recall(GATHERING, limit=SPREAD_TOP)
    assert answer["learned_rank"]["applied"] is False
    assert sum(session_of(r) == "long" for r in answer["results"]) > PER_THREAD
    assert all("thread_spread" not in r["score_components"] for r in answer["results"])


def test_time_order_is_never_spread(memory_store_factory):
    store = crowded_store(memory_store_factory)
    results = store.recall(GATHERING, limit=SPREAD_TOP, sort="time_desc")["results"]
    assert all("thread_spread" not in r.get("score_components", {}) for r in results)


def test_the_setting_reads_from_the_environment():
    assert Config().thread_spread is True
    assert Config.from_env({"LOCALMEM_THREAD_SPREAD": "0"}).thread_spread is False
    with pytest.raises(ConfigError, match="LOCALMEM_THREAD_SPREAD"):
        Config.from_env({"LOCALMEM_THREAD_SPREAD": "sometimes"})


@pytest.mark.parametrize("query", [
    "How many concerts did I go to?", "what is the total I spent on workshops", "In what order did I visit them?",
    "What is the order of the three trips I took?", "which books did I read in the last three months",
    "HOW MUCH did the repairs cost altogether", "every time I ran, how far did I go",
])
def test_gathering_questions_are_recognised(query):
    assert gathers(query)


@pytest.mark.parametrize("query", [
    "", "What did I say about the deploy?", "my favourite totally-red shoes", "ordering pizza tonight",
    "x" * 1_000_000, "how\x00many", "\ud800 how", "NEAR(a b) OR \"c\"*",
])
def test_other_questions_and_hostile_text_are_not(query):
    assert not gathers(query)


def test_gathering_words_are_readable_and_bounded():
    assert all(w == w.lower() and w.strip() == w for w in GATHERING_WORDS)
    assert gathers("y" * 10_000 + " how many") is False  # only the first MAX_QUERY_CHARS are read


def test_spread_order_caps_a_thread_within_the_gap_only():
    scores = [1.0, 0.99, 0.98, 0.97, 0.96, 0.9, 0.2]
    threads = ["t", "t", "t", "t", "t", "u", "v"]
    order = spread_order(scores, threads, per_thread=3, gap=0.4)
    assert order[:4] == [0, 1, 2, 5]  # u's turn within the gap takes the fourth place
    assert order[4] == 3  # v scores more than the gap lower: t keeps its place
    assert spread_order(scores, threads, per_thread=3, gap=0.8)[:5] == [0, 1, 2, 5, 6]  # now v is within it
    assert spread_order(scores, threads)[:PER_THREAD] == list(range(PER_THREAD))
    assert sorted(order) == list(range(len(scores)))  # nothing lost or repeated
    assert spread_order([], []) == []


def test_the_cli_says_how_many_were_moved_down(tmp_path):
    from localmem import MemoryStore

    path = tmp_path / "memory.db"
    model = tmp_path / "flat.json"
    model.write_text(json.dumps(model_dict([tree(0, 0.0, 0.0, 0.0)])))
    crowded_store(lambda **kwargs: MemoryStore(str(path), embedder="hash", **kwargs), learned=False).close()
    env = dict(os.environ, LOCALMEM_LEARNED_RANK_MODEL=str(model))
    cli = [sys.executable, "-m", "localmem", "--db", str(path), "--embedder", "hash", "recall"]
    spread = subprocess.run([*cli, GATHERING], check=True, env=env, capture_output=True, text=True)
    assert "moved down so the first results span more conversations" in spread.stdout + spread.stderr
    plain = subprocess.run([*cli, GATHERING], check=True, capture_output=True, text=True,
                           env=dict(env, LOCALMEM_THREAD_SPREAD="0"))
    assert "moved down" not in plain.stdout + plain.stderr
