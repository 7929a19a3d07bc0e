"""The residual over the top k others (feats.residual) for k = 1, 2, 3, 5, over seeds 0-4."""
import numpy as np
from feats import residual, token_matrix, with_columns
from harness import load, run


def column(pool, k):
    matrix = token_matrix(pool) if len(pool["labels"]) else None
    if matrix is None:
        return np.zeros(len(pool["labels"]))
    out = residual(pool, matrix, k)
    out[np.array([c is None for c in pool["per_token"]])] = 0.0
    return out


data, cache = load(), {}
for name, k in [("base", None), ("r1", 1), ("r2", 2), ("r3", 3), ("r5", 5)]:
    feats = (lambda p: p["rows"]) if k is None else (lambda p, k=k: with_columns(cache, p, lambda q: column(q, k), k))
    results = [run(data, feats=feats, seeds=(seed,)) for seed in range(5)]
    mean = lambda key, sub=None: np.mean([(r[key] if sub is None else r[key][sub]) for r in results])  # noqa: E731
    print(name, f"mean {mean('R@10'):.4f} R@1 {mean('R@1'):.4f} MRR {mean('MRR'):.4f}",
          " ".join(f"{mean('conv', c):.3f}" for c in results[0]["conv"]),
          " ".join(f"{c[:5]} {mean('cat', c):.3f}" for c in results[0]["cat"]), flush=True)
