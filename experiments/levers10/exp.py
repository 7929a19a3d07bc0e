"""Each named candidate of cands.CANDIDATES (or all) as an extra column, over LightGBM seeds 0-4,
against the shipped features; `base` is the harness baseline. Usage: exp.py [NAME ...]"""
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "levers9")]  # cands.py, then levers9 (feats, harness)
from cands import CANDIDATES  # noqa: E402
from feats import with_columns  # noqa: E402  (levers9)
from harness import load, run  # noqa: E402

names = sys.argv[1:] or ["base", *CANDIDATES]
data, cache = load(), {}
for name in names:
    if name == "base":
        feats = lambda p: p["rows"]  # noqa: E731
    else:
        parts = name.split("+")
        feats = (lambda p, parts=parts: with_columns(
            cache, p, lambda q: np.column_stack([CANDIDATES[x](q) for x in parts]), name))
    results = [run(data, feats=feats, seeds=(seed,)) for seed in range(5)]
    mean = lambda key, sub=None: np.mean([(r[key] if sub is None else r[key][sub]) for r in results])  # noqa: E731
    print(f"{name:18s} mean {mean('R@10'):.4f} R@1 {mean('R@1'):.4f} MRR {mean('MRR'):.4f} |",
          " ".join(f"{mean('conv', c):.3f}" for c in results[0]["conv"]), "|",
          " ".join(f"{c[:5]} {mean('cat', c):.3f}" for c in results[0]["cat"]), "| seeds",
          " ".join(f"{r['R@10']:.4f}" for r in results), flush=True)
