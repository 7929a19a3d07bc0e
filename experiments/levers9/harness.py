"""Held-out R@10 of trees trained on recorded pools (record.py), exactly as
train_learned_rank.py trains and scores them, with the features ``feats(pool)`` gives."""
import pickle, sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent.parent / "benchmarks" / "quality")]  # localmem; locomo.py, train_learned_rank.py
import locomo, train_learned_rank as T  # noqa: E402
from localmem import Config  # noqa: E402

WEIGHT = Config().weight_learned


def load(path=HERE / "pools.pkl"):
    return pickle.load(open(path, "rb"))


class Mean:
    """Trees of several seeds, their raw scores averaged (bagging)."""

    def __init__(self, models):
        self.models = models

    def predict(self, rows, raw_score=True):
        return np.mean([m.predict(rows, raw_score=raw_score) for m in self.models], axis=0)


def run(data, feats=lambda p: p["rows"], seeds=(0,), rounds=100, learning_rate=0.15):
    rows = []
    for conv, tested in data["test"].items():
        train = [{**p, "rows": feats(p)} for (held, _), pools in data["train"].items() if held == conv for p in pools]
        model = Mean([T.fit(train, rounds, seed, learning_rate) for seed in seeds])
        rows += T.held_out_rows(model, [{**p, "rows": feats(p)} for p in tested], WEIGHT)
    mean = lambda selected, key="R@10": float(np.mean([r["learned"][key] for r in selected]))  # noqa: E731
    return {"R@10": mean(rows), "R@1": mean(rows, "R@1"), "MRR": mean(rows, "MRR"),
            "conv": {c: mean([r for r in rows if r["question"]["conv_tag"] == c]) for c in data["test"]},
            "cat": {name: mean([r for r in rows if r["question"]["category"] == k])
                    for k, name in locomo.CATEGORIES.items()}}


def show(name, result):
    print(f"{name:30s} R@10 {result['R@10']:.4f} R@1 {result['R@1']:.3f} MRR {result['MRR']:.3f} | "
          + " ".join(f"{v:.3f}" for v in result["conv"].values()) + " | "
          + " ".join(f"{k[:5]} {v:.3f}" for k, v in result["cat"].items()), flush=True)
