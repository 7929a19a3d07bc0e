"""Combinations of feats.comp's columns, mean R@10 over seeds 0-4."""
import numpy as np
from feats import comp, with_columns
from harness import load, run

data, cache = load(), {}
for name, columns in [("base", []), ("c2", [2]), ("c4", [4]), ("c24", [2, 4]), ("c245", [2, 4, 5]),
                      ("c1245", [1, 2, 4, 5])]:
    feats = lambda p, c=tuple(columns): with_columns(cache, p, lambda q: comp(q)[:, list(c)], c)  # noqa: E731
    results = [run(data, feats=feats, seeds=(seed,)) for seed in range(5)]
    print(name, " ".join(f"{r['R@10']:.4f}" for r in results), f"mean {np.mean([r['R@10'] for r in results]):.4f}",
          f"multi-hop {np.mean([r['cat']['multi-hop'] for r in results]):.3f}", flush=True)
