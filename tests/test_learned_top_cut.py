"""The learned ranking's cut (how many candidates the trees score), made a parameter of the
evaluation: ``learned_components(top=)``, ``--learned-top`` of the training scripts and the cut's
cost (benchmarks/speed/learned_top_cost.py); the cuts compared held out are tests/test_union_cut.py's."""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchmarks.quality import train_learned_rank, train_rank_two_shapes
from benchmarks.speed import learned_top_cost
from localmem.recall.learned_rank import LEARNED_TOP, TreeModel, learned_components
from store_helpers import new_store
from tests.test_learned_rank import candidate, model_dict, question_model, tree


def pool_of(size: int) -> list[dict]:
    # Weighted scores falling with the position, shuffled so that pool order is not score order.
    order = np.random.default_rng(7).permutation(size)
    return [candidate(int(i), 1.0 - i / size, 0.5, 0.5, content="did it rain?" if i % 2 else "sunny")
            for i in order]


@pytest.mark.parametrize("top", [1, 30, 45, 90])
def test_the_trees_score_the_top_best_by_weighted_score_and_no_other(top):
    pool = pool_of(70)
    scored = learned_components(question_model(), pool, "did it rain")
    assert len(scored) == min(LEARNED_TOP, 70)
    scored = learned_components(question_model(), pool, "did it rain", top=top)
    assert len(scored) == min(top, 70)
    best = sorted(range(70), key=lambda i: -pool[i]["final_score"])[:top]
    assert sorted(scored) == sorted(best)
    # each scored candidate gets the model's view of it: a question far above a statement
    for index, value in scored.items():
        asks = "?" in pool[index]["memory"]["content"]
        assert (value > 0.99) if asks else (value < 0.01)


def test_a_cut_below_one_is_refused_by_name():
    with pytest.raises(ValueError, match="top"):
        learned_components(question_model(), pool_of(5), "did it rain", top=0)
    with pytest.raises(ValueError, match="top"):
        learned_components(question_model(), [], "did it rain", top=-3)


def test_the_evaluation_adds_the_component_to_the_cut_only():
    pool = {"final": np.array([0.9, 0.1, 0.5, 0.7, 0.3]), "rows": np.zeros((5, 3))}
    ones = lambda rows: np.full(len(rows), 60.0)  # noqa: E731 - the logistic of 60 is 1
    assert train_rank_two_shapes.learned_scores(ones, pool, 1.0, 2).tolist() == pytest.approx([1.9, 0.1, 0.5, 1.7, 0.3])
    assert train_rank_two_shapes.learned_scores(ones, pool, 1.0, 9).tolist() == pytest.approx([1.9, 1.1, 1.5, 1.7, 1.3])
    # the default is recall's cut
    deep = {"final": np.linspace(1.0, 0.0, 100), "rows": np.zeros((100, 3))}
    added = train_rank_two_shapes.learned_scores(ones, deep, 1.0) - deep["final"]
    assert int(np.round(added).sum()) == LEARNED_TOP


def test_held_out_rows_of_the_locomo_script_use_the_cut():
    class Marked:  # lifts the candidates whose first feature is 1, and only them
        def predict(self, rows, raw_score=True):
            return np.where(rows[:, 0] > 0.5, 60.0, -60.0)

    # the evidence is third by weighted score: a cut of 3 reaches it, a cut of 2 does not
    pool = {"question": {}, "final": np.array([0.9, 0.8, 0.77, 0.75, 0.74]),
            "rows": np.array([[0.0], [0.0], [1.0], [0.0], [0.0]]), "keys": ["a", "b", "e", "c", "d"],
            "evidence": {"e"}}
    assert train_learned_rank.held_out_rows(Marked(), [pool], 1.0, 2)[0]["learned"]["MRR"] == pytest.approx(1 / 3)
    assert train_learned_rank.held_out_rows(Marked(), [pool], 1.0, 3)[0]["learned"]["MRR"] == 1.0


@pytest.mark.parametrize("argv, said", [(["--learned-top", "0"], "--learned-top"),
                                        (["--learned-top", "x"], "--learned-top")])
def test_the_training_scripts_refuse_a_bad_cut_by_name(argv, said, capsys):
    for main in (train_rank_two_shapes.main, train_learned_rank.main):
        with pytest.raises(SystemExit):
            main(argv)
        assert said in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--cuts", "30,0"], ["--cuts", "30;45"]])
def test_the_cost_benchmark_refuses_a_bad_cut_by_name_before_opening_a_store(argv, capsys):
    with pytest.raises(SystemExit):
        learned_top_cost.main(argv)
    assert "--cuts" in capsys.readouterr().err


def test_the_cost_benchmark_keeps_each_recall_s_pool_and_times_every_cut():
    store = new_store()
    store.store_many([{"content": f"garden note {i}: " + ("did it rain?" if i % 3 else "sunny")}
                      for i in range(60)])
    store.learned_model = question_model()
    pools = learned_top_cost.kept_pools(store, [("garden rain", {"limit": 10, "adaptive_floor": False}),
                                                ("sunny garden", {"limit": 5})])
    assert len(pools) == 2 and all(len(candidates) > 30 for _, candidates, _, _ in pools)
    times = learned_top_cost.time_cuts(pools, [30, 45], 2, time.perf_counter)
    assert sorted(times) == [30, 45] and all(len(v) == 2 and min(v) > 0 for v in times.values())


def test_the_cost_benchmark_stops_when_the_trees_are_not_applied():
    store = new_store()
    store.store_many([{"content": "a note"}])
    store.learned_model = TreeModel.from_dict(model_dict([tree(0, 0.5, 0.0, 1.0)], embedders=("another",)))
    with pytest.raises(SystemExit, match="not applied"):
        learned_top_cost.kept_pools(store, [("a note", {"limit": 5})])
