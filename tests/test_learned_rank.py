"""Learned re-ranking: the tree model's evaluator, the pool features, and the
``learned`` component recall adds with them (issue 16)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from localmem import Config
from localmem.recall.late_interaction import TokenMatch
from localmem.recall.learned_rank import FEATURES, LEARNED_TOP, TreeModel, pool_features

from store_helpers import new_store

QUESTION = FEATURES.index("is_question")
UNREADABLE = "no learned-rank model could be read (why: on the stderr of the process that opened this store)"
FINAL = FEATURES.index("final")


def tree(feature: int, threshold: float, low: float, high: float) -> dict:
    """A one-split tree: ``low`` when x[feature] <= threshold, else ``high``."""
    return {"feature": [feature, -1, -1], "threshold": [threshold, 0.0, 0.0], "left": [1, 0, 0],
            "right": [2, 0, 0], "value": [0.0, low, high]}


def model_dict(trees: list[dict], embedders=("hash",), depth: int = 1) -> dict:
    return {"format": 1, "features": list(FEATURES), "embedders": list(embedders), "depth": depth,
            "trees": trees}


def question_model(embedders=("hash",)) -> TreeModel:
    """Ranks memories that ask a question far above those that do not."""
    return TreeModel.from_dict(model_dict([tree(QUESTION, 0.5, -6.0, 6.0)], embedders))


# -- the evaluator -------------------------------------------------------------------------------------


def test_trees_are_summed_over_their_leaves():
    deeper = {"feature": [FINAL, -1, QUESTION, -1, -1], "threshold": [0.5, 0, 0.5, 0, 0],
              "left": [1, 0, 3, 0, 0], "right": [2, 0, 4, 0, 0], "value": [0, 1.0, 0, 2.0, 3.0]}
    model = TreeModel.from_dict(model_dict([tree(QUESTION, 0.5, -1.0, 1.0), deeper], depth=2))
    rows = np.zeros((4, len(FEATURES)))
    rows[1, FINAL] = 0.9
    rows[2, FINAL], rows[2, QUESTION] = 0.9, 1.0
    rows[3, QUESTION] = 1.0
    # row 0: -1 + 1; row 1: -1 + 2; row 2: 1 + 3; row 3: 1 + 1
    assert model.raw_scores(rows).tolist() == [0.0, 1.0, 4.0, 2.0]


def test_a_threshold_is_inclusive_on_the_left():
    model = TreeModel.from_dict(model_dict([tree(FINAL, 0.5, -1.0, 1.0)]))
    rows = np.zeros((3, len(FEATURES)))
    rows[:, FINAL] = [0.5, np.nextafter(0.5, 1.0), 0.4]
    assert model.raw_scores(rows).tolist() == [-1.0, 1.0, -1.0]


def test_a_model_for_other_features_or_format_is_refused():
    other = model_dict([tree(0, 0.5, 0.0, 1.0)])
    for features in ([*FEATURES[1:], FEATURES[0]], ["speaker_is_caroline", *FEATURES], []):
        other["features"] = features
        with pytest.raises(ValueError, match="other features"):
            TreeModel.from_dict(other)
    with pytest.raises(ValueError, match="format"):
        TreeModel.from_dict({**model_dict([tree(0, 0.5, 0.0, 1.0)]), "format": 2})


def test_a_model_trained_before_features_were_appended_still_ranks():
    # A model file of one's own (LOCALMEM_LEARNED_RANK_MODEL) written before the role
    # features existed lists a prefix of FEATURES; its splits index the same columns.
    older = model_dict([tree(QUESTION, 0.5, -6.0, 6.0)])
    older["features"] = list(FEATURES[:FEATURES.index("token_residual") + 1])
    model = TreeModel.from_dict(older)
    rows = np.zeros((2, len(FEATURES)))
    rows[1, QUESTION] = 1.0
    assert model.raw_scores(rows).tolist() == [-6.0, 6.0]
    # ... but a split on a column its own list does not name is refused
    beyond = {**older, "trees": [tree(len(older["features"]), 0.5, -1.0, 1.0)]}
    with pytest.raises(ValueError, match="outside"):
        TreeModel.from_dict(beyond)


def test_the_packaged_model_reads_the_features_recall_computes():
    model = TreeModel.packaged()
    assert model.features == FEATURES
    assert "all-MiniLM-L6-v2" in model.embedders
    assert model.feature.shape[0] >= 50 and model.depth >= 1
    assert model.feature.max() < len(FEATURES)
    rows = np.random.default_rng(0).uniform(-1, 1, size=(30, len(FEATURES)))
    scores = model.raw_scores(rows)
    assert np.isfinite(scores).all() and scores.std() > 0  # it does tell candidates apart


# -- the features --------------------------------------------------------------------------------------


def candidate(pk: int, final: float, vector: float, keyword: float, *, thread: str | None = None,
              content: str = "a statement", timestamp: str = "2024-01-01T00:00:00+00:00",
              similarity: float | None = 0.3, match: TokenMatch | None = None,
              metadata: dict | None = None) -> dict:
    metadata = {**({"thread": thread} if thread else {}), **(metadata or {})}
    return {"id": f"m{pk}", "_pk": pk, "final_score": final, "_similarity": similarity, "_token_match": match,
            "score_components": {"vector": vector, "keyword": keyword, "tag": 0.0},
            "memory": {"content": content, "metadata": metadata, "tags": [], "context": "default",
                       "timestamp": timestamp}}


def column(rows: np.ndarray, name: str) -> list[float]:
    return [round(float(v), 6) for v in rows[:, FEATURES.index(name)]]


def test_pool_features_measure_each_candidate_against_the_pool():
    match = TokenMatch(max_sim=0.6, best=0.9, median=0.55, share_over_half=0.75, share_over_07=0.25, tokens=12)
    pool = [candidate(1, 0.9, 0.8, 0.2, match=match), candidate(2, 0.5, 0.3, 0.7, similarity=None),
            candidate(3, 0.7, 0.5, 0.5, content="did you go?")]
    rows = pool_features(pool, "where did she go")
    assert rows.shape == (3, len(FEATURES))
    assert column(rows, "final_gap") == [0.0, -0.4, -0.2]
    assert column(rows, "keyword_gap") == [-0.5, 0.0, -0.2]
    assert column(rows, "final_rank") == [1.0, round(1 / 3, 6), 0.5]
    assert column(rows, "cosine") == [0.3, 0.0, 0.3]  # no cosine counts as none
    assert column(rows, "max_sim") == [0.6, 0.0, 0.0]
    assert column(rows, "share_over_half") == [0.75, 0.0, 0.0]
    assert column(rows, "log_tokens")[0] == round(float(np.log1p(12)), 6)
    assert column(rows, "is_question") == [0.0, 0.0, 1.0]
    assert column(rows, "query_words") == [4.0] * 3


def per_token(*values: float) -> TokenMatch:
    return TokenMatch(max_sim=float(np.mean(values)), best=max(values), median=float(np.median(values)),
                      share_over_half=0.0, share_over_07=0.0, tokens=5, per_token=np.array(values))


def test_token_residual_is_what_a_candidate_matches_beyond_the_leaders():
    # four leaders by final score; the leaders cover token 0 well and token 1 poorly
    pool = [candidate(1, 0.9, 0.5, 0.5, match=per_token(0.9, 0.2)),
            candidate(2, 0.8, 0.5, 0.5, match=per_token(0.8, 0.3)),
            candidate(3, 0.7, 0.5, 0.5, match=per_token(0.7, 0.1)),
            candidate(4, 0.6, 0.5, 0.5, match=per_token(0.6, 0.4)),
            candidate(5, 0.2, 0.5, 0.5, match=per_token(0.1, 0.9)),   # matches what they miss
            candidate(6, 0.1, 0.5, 0.5, match=per_token(0.85, 0.25))]  # adds nothing they lack
    residual = column(pool_features(pool, "two words"), "token_residual")
    # outsiders against leaders 1-3 (token maxima 0.9, 0.3)
    assert residual[4] == round((0.0 + 0.6) / 2, 6)
    assert residual[5] == 0.0
    # each of the top three against the other three of the top four
    assert residual[0] == round((0.9 - 0.8) / 2, 6)       # others: pk 2, 3, 4 -> 0.8, 0.4
    assert residual[1] == 0.0                              # others: pk 1, 3, 4 -> 0.9, 0.4
    assert residual[2] == 0.0
    assert residual[3] == round((0.4 - 0.3) / 2, 6)       # the fourth is measured against the top three


def test_token_residual_is_zero_without_comparable_token_matches():
    without = TokenMatch(max_sim=0.5, best=0.9, median=0.5, share_over_half=0.5, share_over_07=0.0, tokens=3)
    pool = [candidate(1, 0.9, 0.5, 0.5, match=per_token(0.3, 0.3)),
            candidate(2, 0.5, 0.5, 0.5, match=None),
            candidate(3, 0.4, 0.5, 0.5, match=without),
            candidate(4, 0.3, 0.5, 0.5, match=per_token(0.9, 0.9, 0.9))]  # another query's width
    residual = column(pool_features(pool, "two words"), "token_residual")
    assert residual[1:] == [0.0, 0.0, 0.0]
    # a leader without matches counts as matching every token at the pool's lowest match
    assert residual[0] == 0.0
    assert column(pool_features(pool[:1], "two words"), "token_residual") == [0.0]  # no one to compare


def test_a_leader_without_token_matches_hides_nothing():
    pool = [candidate(1, 0.9, 0.5, 0.5, match=None),
            candidate(2, 0.5, 0.5, 0.5, match=per_token(0.2, 0.8))]
    residual = column(pool_features(pool, "two words"), "token_residual")
    # pk 2 against pk 1, which stands in at the pool's lowest known match (0.2)
    assert residual == [0.0, round((0.0 + 0.6) / 2, 6)]


def test_thread_features_follow_the_thread_order_not_the_pool_order():
    late, early = "2024-01-02T00:00:00+00:00", "2024-01-01T00:00:00+00:00"
    pool = [candidate(5, 0.9, 0.9, 0.1, thread="t", timestamp=late),
            candidate(7, 0.4, 0.2, 0.6, thread="t", timestamp=early),
            candidate(6, 0.6, 0.4, 0.4, thread="t", timestamp=early),
            candidate(8, 0.8, 0.1, 0.9)]  # no thread: a thread of its own
    rows = pool_features(pool, "q")
    # thread order: pk 6, pk 7 (same time: insertion order), then pk 5
    assert column(rows, "prev_final") == [0.4, 0.6, 0.0, 0.0]
    assert column(rows, "next_final") == [0.0, 0.9, 0.4, 0.0]
    assert column(rows, "prev_keyword") == [0.6, 0.4, 0.0, 0.0]
    assert column(rows, "thread_best") == [0.9, 0.9, 0.9, 0.8]
    assert column(rows, "thread_top20") == [3.0, 3.0, 3.0, 1.0]
    assert column(rows, "thread_gap") == [0.0, -0.5, -0.3, 0.0]


def thread_rows_one_by_one(pool: list[dict]) -> list[list[float]]:
    """The thread features as defined, walked thread by thread in plain Python."""
    finals = [c["final_score"] for c in pool]
    top = sorted(range(len(pool)), key=lambda i: -finals[i])[:20]
    threads: dict = {}
    for index, c in enumerate(pool):
        thread = c["memory"]["metadata"].get("thread")
        threads.setdefault(thread if thread else ("alone", index), []).append(
            (c["memory"]["timestamp"], c["_pk"], index))
    rows = [[0.0] * 9 for _ in pool]
    for members in threads.values():
        ordered = [index for *_, index in sorted(members)]
        best = max(finals[i] for i in ordered)
        for position, i in enumerate(ordered):
            if position > 0:
                p = pool[ordered[position - 1]]
                rows[i][0:3] = p["score_components"]["vector"], p["score_components"]["keyword"], p["final_score"]
            if position + 1 < len(ordered):
                q = pool[ordered[position + 1]]
                rows[i][3:6] = q["score_components"]["vector"], q["score_components"]["keyword"], q["final_score"]
            rows[i][6:9] = best, float(sum(1 for j in ordered if j in top)), finals[i] - best
    return rows


def test_thread_features_equal_a_walk_thread_by_thread_on_a_mixed_pool():
    random = np.random.default_rng(7)
    stamps = [f"2024-01-0{d}T00:00:00+00:00" for d in (1, 2, 3)]
    pool = [candidate(int(random.integers(1, 30)), float(random.random()), float(random.random()),
                      float(random.random()), thread=[None, "a", "b", "c"][int(random.integers(0, 4))],
                      timestamp=stamps[int(random.integers(0, 3))]) for _ in range(60)]
    pool[3]["final_score"] = pool[4]["final_score"]  # a tie among the best
    first = FEATURES.index("prev_vector")
    got = pool_features(pool, "q")[:, first:first + 9]
    assert got.tolist() == thread_rows_one_by_one(pool)  # exactly: the same floats


# -- in recall -----------------------------------------------------------------------------------------


def filled_store(**config):
    store = new_store(config=Config(**config)) if config else new_store()
    ids = {
        "asks": store.store("Did the garden party on Sunday go well?"),
        "tells": store.store("The garden party on Sunday went well, lots of people came"),
        "other": store.store("Bought new tyres for the car"),
    }
    return store, ids


def test_without_a_model_for_its_embedder_recall_says_why():
    store, _ = filled_store()
    response = store.recall("garden party Sunday")
    assert response["learned_rank"]["applied"] is False
    assert "hash" in response["learned_rank"]["reason"]
    assert all("learned" not in r["score_components"] for r in response["results"])


def test_the_learned_component_is_added_to_the_score_and_reorders():
    store, ids = filled_store()
    before = store.recall("garden party Sunday went well")
    assert before["results"][0]["id"] == ids["tells"]
    weighted = {r["id"]: r["final_score"] for r in before["results"]}
    store.learned_model = question_model()
    after = store.recall("garden party Sunday went well")
    assert after["learned_rank"] == {"applied": True, "candidates": len(after["results"])}
    assert after["results"][0]["id"] == ids["asks"]  # the model's preference wins
    for result in after["results"]:
        learned = result["score_components"]["learned"]
        expected = 1 / (1 + np.exp(6.0)) if result["id"] != ids["asks"] else 1 / (1 + np.exp(-6.0))
        assert learned == pytest.approx(expected)
        assert result["final_score"] == pytest.approx(weighted[result["id"]] + learned)
        assert result["score"] == result["final_score"]


def test_weight_learned_scales_the_component():
    store, ids = filled_store(weight_learned=0.0)
    store.learned_model = question_model()
    response = store.recall("garden party Sunday went well")
    assert response["results"][0]["id"] == ids["tells"]  # weight 0: the order of the weighted sum
    assert response["results"][0]["score_components"]["learned"] < 0.01


@pytest.mark.parametrize("config, params, reason", [
    ({"learned_rank": False}, {}, "LOCALMEM_LEARNED_RANK=0"),
    ({"token_evidence": False}, {}, "token evidence is off"),
    ({}, {"sort": "time_desc"}, "sorted by time_desc"),
])
def test_when_the_model_is_not_used_the_answer_says_so(config, params, reason):
    store, _ = filled_store(**config)
    store.learned_model = question_model()
    response = store.recall("garden party Sunday", **params)
    assert response["learned_rank"]["applied"] is False
    assert reason in response["learned_rank"]["reason"]
    assert all("learned" not in r["score_components"] for r in response["results"])


def test_an_explicit_query_embedding_gets_no_learned_component():
    store, _ = filled_store()
    store.learned_model = question_model()
    vector = store.embed_texts(["garden party"])[0]
    response = store.recall("garden party", embedding=np.frombuffer(vector, dtype=np.float32).tolist())
    assert response["learned_rank"]["applied"] is False
    assert "explicit query embedding" in response["learned_rank"]["reason"]


def test_a_recall_without_text_has_no_learned_rank_block():
    store, _ = filled_store()
    assert "learned_rank" not in store.recall(None)


def test_an_unreadable_model_file_leaves_recall_working(monkeypatch, capsys):
    def broken():
        raise ValueError("unknown learned-rank model format")

    monkeypatch.setattr(TreeModel, "packaged", staticmethod(broken))
    store, ids = filled_store()
    response = store.recall("garden party Sunday went well")
    assert response["results"][0]["id"] == ids["tells"]
    assert response["learned_rank"] == {"applied": False,
                                        "reason": UNREADABLE}
    assert "learned ranking unavailable: unknown learned-rank model format" in capsys.readouterr().err


def test_config_reads_the_switch_and_the_weight_from_the_environment():
    config = Config.from_env({"LOCALMEM_LEARNED_RANK": "0", "SEARCH_WEIGHT_LEARNED": "0.5"})
    assert config.learned_rank is False and config.weight_learned == 0.5
    assert Config.from_env({}).learned_rank is True
    with pytest.raises(Exception, match="LOCALMEM_LEARNED_RANK"):
        Config.from_env({"LOCALMEM_LEARNED_RANK": "perhaps"})


@pytest.mark.model
def test_minilm_stores_use_the_packaged_model_in_recall_and_recall_v1():
    pytest.importorskip("sentence_transformers")
    store = new_store(embedder="auto")
    store.store("Melanie signed up for a pottery class yesterday", tags=["t"])
    store.store("The weather was cold and grey", tags=["t"])
    response = store.recall("What class did Melanie sign up for?", tags=["t"])
    assert response["learned_rank"]["applied"] is True
    assert response["results"][0]["memory"]["content"].startswith("Melanie signed up")
    assert 0.0 <= response["results"][0]["score_components"]["learned"] <= 1.0
    assert json.loads(json.dumps(response))  # plain JSON numbers
    hybrid = store.recall_v1("What class did Melanie sign up for?", filters={"tags": ["t"]})
    assert hybrid["learned_rank"] == {"applied": True, "candidates": 2}
    first = hybrid["results"][0]
    assert first["summary"].startswith("Melanie signed up")
    assert 0.0 <= first["score_components"]["learned"] <= 1.0 and 0.0 <= first["score"] <= 1.0


def test_the_model_scores_only_the_best_candidates_by_weighted_score():
    store = new_store()
    notes = [f"garden note {i}: " + "weeds " * (i % 7) + ("did it rain?" if i % 3 else "sunny") for i in range(45)]
    store.store_many([{"content": note} for note in notes])
    store.learned_model = question_model()
    response = store.recall("garden weeds rain", limit=45, adaptive_floor=False)
    scored = [r for r in response["results"] if "learned" in r["score_components"]]
    unscored = [r for r in response["results"] if "learned" not in r["score_components"]]
    assert len(scored) == LEARNED_TOP == response["learned_rank"]["candidates"]
    assert unscored
    weighted = [r["final_score"] - r["score_components"]["learned"] for r in scored]
    assert max(r["final_score"] for r in unscored) <= min(weighted) + 1e-12


def test_a_model_file_of_ones_own_replaces_the_packaged_one(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(model_dict([tree(QUESTION, 0.5, -6.0, 6.0)])), encoding="utf-8")
    assert Config.from_env({"LOCALMEM_LEARNED_RANK_MODEL": str(path)}).learned_rank_model == str(path)
    store, ids = filled_store(learned_rank_model=str(path))
    response = store.recall("garden party Sunday went well")
    assert response["learned_rank"]["applied"] is True  # this model names the hash embedder
    assert response["results"][0]["id"] == ids["asks"]


def test_a_missing_model_file_is_said_and_recall_goes_on(tmp_path, capsys):
    missing = tmp_path / "nowhere.json"
    store, ids = filled_store(learned_rank_model=str(missing))
    response = store.recall("garden party Sunday went well")
    assert response["learned_rank"] == {"applied": False,
                                        "reason": UNREADABLE}
    assert response["results"][0]["id"] == ids["tells"]
    assert str(missing) in capsys.readouterr().err


@pytest.mark.parametrize("damage", [
    lambda d: d["trees"][0].update(left=[7, 0, 0]),  # a split pointing outside its tree
    lambda d: d["trees"][0].update(feature=[len(FEATURES), -1, -1]),  # a feature that does not exist
    lambda d: d["trees"][0].update(value=[0.0, float("nan"), 1.0]),
    lambda d: d["trees"][0].update(threshold=[0.5]),  # arrays of different lengths
    lambda d: d.update(trees="not a list of trees"),
    lambda d: d.update(depth=10 ** 9),
    lambda d: d.pop("embedders"),
])
def test_a_damaged_model_is_refused_not_walked(damage):
    data = model_dict([tree(QUESTION, 0.5, -1.0, 1.0)])
    damage(data)
    with pytest.raises(ValueError, match="learned-rank model"):
        TreeModel.from_dict(data)


def test_a_deeply_nested_model_file_is_said_and_recall_goes_on(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    store, ids = filled_store(learned_rank_model=str(path))
    response = store.recall("garden party Sunday went well")
    assert response["learned_rank"]["applied"] is False
    assert response["results"][0]["id"] == ids["tells"]
    assert "learned ranking unavailable" in capsys.readouterr().err


def test_a_negative_learned_weight_is_refused_by_name():
    with pytest.raises(Exception, match="SEARCH_WEIGHT_LEARNED must be 0 or more, got '-1'"):
        Config.from_env({"SEARCH_WEIGHT_LEARNED": "-1"})


@pytest.mark.parametrize("make, said", [
    (lambda tmp: "/dev/zero", "not a regular file"),
    (lambda tmp: str(tmp), "Is a directory"),
    (lambda tmp: _big_file(tmp), "larger than"),
    (lambda tmp: _file(tmp, b"\xff\xfe not json"), "not UTF-8 JSON"),
])
def test_a_model_path_that_is_no_model_file_is_refused_unread(tmp_path, capsys, make, said):
    store, ids = filled_store(learned_rank_model=make(tmp_path))
    response = store.recall("garden party Sunday went well")
    assert response["learned_rank"]["applied"] is False
    assert response["results"][0]["id"] == ids["tells"]
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z"])
def test_memories_at_the_calendars_ends_leave_dated_recalls_working(stamp):
    """Issue 33 item 7: one memory stamped 9999-12-31T23:59:59.999999Z made every learned-rank
    recall whose query names a date raise ValueError (year 10000), in recall and recall_v1."""
    store, ids = filled_store()
    edge = store.store("Did the garden party happen long ago?", timestamp=stamp)
    store.learned_model = question_model()
    for query in ("garden party on 3 May 2023", "garden party in July", "garden party on 31 December 9999"):
        response = store.recall(query)
        assert response["learned_rank"]["applied"] is True and response["learned_rank"]["dates_in_query"]
        assert response["results"]
        hybrid = store.recall_v1(query)
        assert hybrid["learned_rank"]["applied"] is True and hybrid["results"]


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z"])
def test_threaded_memories_at_the_calendars_ends_are_stored_and_found(stamp):
    """Issue 33 item 7 (the same ends, where threads read them): the band around a threaded
    memory's time overflowed, so storing one raised OverflowError."""
    store = new_store()
    first = store.store("Did the garden party happen long ago?", timestamp=stamp, metadata={"thread": "party"})
    second = store.store("Yes, and everyone came to the garden", timestamp=stamp, metadata={"thread": "party"})
    store.update(first, content="Did the garden party happen long, long ago?")
    assert store.get(first)["timestamp"].startswith(stamp[:10])
    assert store.get(second)["content"].startswith("Yes, and everyone")


def test_a_fifo_as_the_model_path_is_refused_without_waiting(tmp_path):
    """Issue 33 item 14: the file was opened (blocking until a writer came) before the regular-file check."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") or k == "LOCALMEM_DAEMON"}
    env.update(PYTHONPATH=str(root), LOCALMEM_LEARNED_RANK_MODEL=str(fifo))
    command = [sys.executable, "-m", "localmem", "--db", str(tmp_path / "m.db"), "--embedder", "hash"]
    subprocess.run([*command, "store", "The garden party is on Sunday"], env=env, check=True,
                   capture_output=True, timeout=60)
    done = subprocess.run([*command, "--json", "recall", "garden party Sunday"], env=env, capture_output=True,
                          text=True, timeout=60)  # before the fix: no answer until the timeout
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["memory"]["content"].startswith("The garden party")
    assert "learned ranking unavailable" in done.stderr and "not a regular file" in done.stderr
    assert str(fifo) in done.stderr


def _file(tmp_path, data: bytes) -> str:
    path = tmp_path / "model.json"
    path.write_bytes(data)
    return str(path)


def _big_file(tmp_path) -> str:
    from localmem.recall.learned_rank import MAX_MODEL_BYTES

    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(MAX_MODEL_BYTES + 10)  # sparse: costs no disk
    return str(path)


# -- in recall_v1 (Kagura's hybrid merge) --------------------------------------------------------------


def v1_rows(response: dict) -> dict[str, dict]:
    return {r["memory_id"]: r for r in response["results"]}


def test_recall_v1_hybrid_averages_the_learned_component_into_its_score():
    store, ids = filled_store()
    before = store.recall_v1("garden party Sunday went well", k=3)
    assert before["results"][0]["memory_id"] == ids["tells"]
    assert "hash" in before["learned_rank"]["reason"]  # the packaged model is MiniLM's
    hybrid = {i: r["score"] for i, r in v1_rows(before).items()}
    store.learned_model = question_model()
    after = store.recall_v1("garden party Sunday went well", k=3)
    assert after["learned_rank"] == {"applied": True, "candidates": 3}
    assert after["results"][0]["memory_id"] == ids["asks"]  # the model's preference wins
    for memory_id, row in v1_rows(after).items():
        learned = row["score_components"]["learned"]
        expected = 1 / (1 + np.exp(-6.0)) if memory_id == ids["asks"] else 1 / (1 + np.exp(6.0))
        assert learned == pytest.approx(expected, abs=1e-6)
        # weight 1: the mean of the hybrid mix and the component, so score stays in [0, 1]
        assert row["score"] == pytest.approx((hybrid[memory_id] + learned) / 2, abs=1e-5)
        assert 0.0 <= row["score"] <= 1.0
    assert [r["score"] for r in after["results"]] == sorted((r["score"] for r in after["results"]), reverse=True)


def test_recall_v1_learned_weight_zero_keeps_the_hybrid_order():
    store, ids = filled_store(weight_learned=0.0)
    store.learned_model = question_model()
    response = store.recall_v1("garden party Sunday went well", k=3)
    assert response["learned_rank"]["applied"] is True
    assert response["results"][0]["memory_id"] == ids["tells"]


@pytest.mark.parametrize("config, mode, reason", [
    ({}, "semantic", "search_mode is semantic"),
    ({}, "keyword", "search_mode is keyword"),
    ({"learned_rank": False}, None, "LOCALMEM_LEARNED_RANK=0"),
    ({"token_evidence": False}, None, "token evidence is off"),
])
def test_recall_v1_says_when_the_model_is_not_used(config, mode, reason):
    store, ids = filled_store(**config)
    store.learned_model = question_model()
    response = store.recall_v1("garden party Sunday went well", k=3, search_mode=mode)
    assert response["learned_rank"]["applied"] is False
    assert reason in response["learned_rank"]["reason"]
    assert all("learned" not in r["score_components"] for r in response["results"])
    assert response["results"][0]["memory_id"] == ids["tells"]


def test_recall_v1_without_a_semantic_search_says_so():
    store = new_store(embedder="none")
    store.store("Did the garden party on Sunday go well?")
    store.learned_model = question_model()
    response = store.recall_v1("garden party Sunday")
    assert response["degraded"] is True
    assert response["learned_rank"] == {"applied": False,
                                        "reason": "no semantic search ran; the model reads MaxSim"}



def test_recall_v1_scores_the_best_by_hybrid_mix_and_keeps_the_rest_below_them():
    store = new_store()
    notes = [f"garden note {i}: " + "weeds " * (i % 7) + ("did it rain?" if i % 3 else "sunny") for i in range(45)]
    store.store_many([{"content": note} for note in notes])
    hybrid = {r["memory_id"]: r["score"] for r in store.recall_v1("garden weeds rain", k=45)["results"]}
    store.learned_model = question_model()
    response = store.recall_v1("garden weeds rain", k=45)
    rows = response["results"]
    scored = [r for r in rows if "learned" in r["score_components"]]
    unscored = [r for r in rows if "learned" not in r["score_components"]]
    assert len(scored) == LEARNED_TOP == response["learned_rank"]["candidates"] and unscored
    assert min(hybrid[r["memory_id"]] for r in scored) >= max(hybrid[r["memory_id"]] for r in unscored)
    for row in unscored:  # a component of 0, at weight 1
        assert row["score"] == pytest.approx(hybrid[row["memory_id"]] / 2, abs=1e-5)
    # the model's say is bounded by its weight: no unscored memory passes a scored one's hybrid part
    assert max(r["score"] for r in unscored) <= min(r["score"] - r["score_components"]["learned"] / 2
                                                    for r in scored) + 1e-5


def test_role_features_read_the_stored_role_and_the_question_s_pronouns():
    pool = [candidate(1, 0.9, 0.8, 0.2, content="I adopted a beagle", metadata={"role": "user"}),
            candidate(2, 0.5, 0.3, 0.7, content="x" * 1999, metadata={"role": "assistant", "part": 1, "parts": 3}),
            candidate(3, 0.7, 0.5, 0.5, metadata={"role": "Caroline", "parts": True}),  # not a role capture writes
            candidate(4, 0.6, 0.5, 0.5)]
    rows = pool_features(pool, "What breed is my dog?")
    assert column(rows, "role_user") == [1.0, 0.0, 0.0, 0.0]
    assert column(rows, "role_assistant") == [0.0, 1.0, 0.0, 0.0]
    assert column(rows, "split_part") == [0.0, 1.0, 0.0, 0.0]
    assert column(rows, "log_chars")[1] == round(float(np.log1p(1999)), 6)
    assert column(rows, "query_self") == [1.0] * 4 and column(rows, "query_assistant") == [0.0] * 4
    about_assistant = pool_features(pool, "Which hotel did you recommend?")
    assert column(about_assistant, "query_self") == [0.0] * 4
    assert column(about_assistant, "query_assistant") == [1.0] * 4
    # whole words only: "mine" counts, "Myanmar" and "youth" do not
    assert column(pool_features(pool[:1], "Trips to Myanmar for youth groups"), "query_self") == [0.0]
    assert column(pool_features(pool[:1], "Is the red bike mine?"), "query_self") == [1.0]
