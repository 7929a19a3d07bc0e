"""The two-shape training run (benchmarks/quality/train_rank_two_shapes.py) end to end on a
small LoCoMo conversation and LongMemEval instances: it reports every held-out row and writes
a model recall can load."""

from __future__ import annotations

import json

import pytest

from benchmarks.common import ranking_pools
from benchmarks.quality import train_rank_two_shapes
from localmem.recall.learned_rank import FEATURES, TreeModel
from tests.two_shape_data import LOCOMO, small_data

pytest.importorskip("lightgbm")

@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_run_reports_held_out_rows_and_writes_a_loadable_model(tmp_path, capsys):
    output = tmp_path / "model.json"
    assert train_rank_two_shapes.main([*small_data(tmp_path, 30, 6), "--rounds", "5", "--write", "--misses",
                                       "--output", str(output), "--seen-ids", "q0,q1,q2,q3"]) == 0
    printed = capsys.readouterr().out
    for row in ("FTS5 BM25", "weighted score alone", "trained on the other dataset only",
                "trees on both, fold held out |", "no role features"):
        assert row in printed
    assert "6 LongMemEval questions (6 instances" in printed
    assert "LongMemEval evidence turns the held-out trees leave out of the top 10:" in printed
    model = TreeModel.from_file(str(output))
    assert model.features == FEATURES and len(model.feature) == 5
    assert "LongMemEval" in json.loads(output.read_text())["trained_on"]
    assert sorted(json.loads(output.read_text())["lme_ids"]) == [f"q{n}" for n in range(6)]
    # the packaged trees' in-sample instances are named, so the table is repeated on the others
    assert "LongMemEval questions the packaged trees were not trained on (2)" in printed


def test_recorded_pools_are_reused_until_the_configuration_or_item_changes(tmp_path):
    from localmem import Config

    calls = []

    def record():
        calls.append(1)
        return {"keys": ["0:1"], "n": len(calls)}

    cache = ranking_pools.PoolCache(str(tmp_path), "hash", Config())
    assert cache.get(b"instance-1", record) == {"keys": ["0:1"], "n": 1}
    assert cache.get(b"instance-1", record) == {"keys": ["0:1"], "n": 1} and len(calls) == 1
    assert cache.get(b"instance-2", record)["n"] == 2  # another item is recorded
    changed = ranking_pools.PoolCache(str(tmp_path), "hash", Config().with_changes(weight_vector=0.5))
    assert changed.get(b"instance-1", record)["n"] == 3  # another configuration too
    assert ranking_pools.PoolCache(None, "hash", Config()).get(b"x", record)["n"] == 4  # no folder: none kept


def test_longmemeval_pools_count_lme_weight_times_in_training():
    import numpy as np

    pools = [{"shape": "lme", "labels": np.array([1.0, 0.0])}, {"shape": "locomo", "labels": np.array([0.0, 1.0])},
             {"shape": "lme", "labels": np.array([0.0, 0.0])}]
    trained = train_rank_two_shapes.weighted(pools, 3)
    assert [p["shape"] for p in trained] == ["lme"] * 3 + ["locomo"]  # a pool without evidence is left out
    with pytest.raises(SystemExit):
        train_rank_two_shapes.main(["--lme-weight", "0"])


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_relative_dates_run_reports_both_settings_held_out(tmp_path, capsys):
    from benchmarks.quality import relative_dates

    assert relative_dates.main([*small_data(tmp_path, 20, 5), "--seeds", "0", "--rounds", "3",
                                "--locomo-asked-at", "last-session"]) == 0
    printed = capsys.readouterr().out
    assert "LoCoMo asked last-session" in printed
    for label in ("| off | 0 |", "| on | 0 |", "| off | mean |", "| on | mean |"):
        assert label in printed
    assert "- locomo:" in printed and "- lme:" in printed


def test_the_runners_spread_a_gathering_pool_as_recall_does():
    import numpy as np

    from localmem.recall import thread_spread

    pool = {"question": "How many concerts did I go to in the past two months?",
            "keys": ["0:0", "0:1", "0:2", "0:3", "1:0", "2:0"], "threads": ["a", "a", "a", "a", "b", "c"]}
    scores = np.array([0.9, 0.89, 0.88, 0.87, 0.7, 0.1])
    spread = train_rank_two_shapes.ranked_keys(pool, scores)
    expected = thread_spread.spread_order(sorted(scores.tolist(), reverse=True), pool["threads"])
    assert spread == [pool["keys"][i] for i in expected]
    assert spread.index("1:0") == thread_spread.PER_THREAD  # the other session's turn within the gap moves up
    assert train_rank_two_shapes.ranked_keys(pool, scores, spread=False) == pool["keys"]
    assert train_rank_two_shapes.ranked_keys({**pool, "question": "Which concert was first?"}, scores) == pool["keys"]


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")
def test_the_thread_spread_run_reports_every_setting_and_the_held_out_choice(tmp_path, capsys):
    from benchmarks.quality import thread_spread

    assert thread_spread.main([*small_data(tmp_path, 20, 5), "--seeds", "0", "--rounds", "3"]) == 0
    printed = capsys.readouterr().out
    assert "Gathering questions: LoCoMo" in printed
    for row in ("| no spread |", "| recall's: ", "| 1 per thread, gap 9.0 |", "| chosen per fold on the other folds |"):
        assert row in printed
    assert printed.count("- seed 0, fold ") == 5


def test_recorded_pools_are_keyed_without_the_training_scripts(tmp_path, monkeypatch):
    """Changing how trees are trained or compared must not record an hour of pools again."""
    from pathlib import Path

    from localmem import Config

    read = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real(self))
    ranking_pools.PoolCache(str(tmp_path), "hash", Config())
    assert {"ranking_pools.py", "locomo.py", "longmemeval.py", "pipeline.py"} <= set(read)
    assert "train_rank_two_shapes.py" not in read and "training_recipes.py" not in read
