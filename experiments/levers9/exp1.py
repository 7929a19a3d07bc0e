"""Baseline over three seeds, bagging, and each of feats.comp's six columns (seed 0)."""
from feats import comp, with_columns
from harness import load, run, show

data, cache = load(), {}
for seed in (0, 1, 2):
    show(f"baseline s{seed}", run(data, seeds=(seed,)))
show("bag 5 seeds", run(data, seeds=(0, 1, 2, 3, 4)))
for seed in (0, 1, 2):
    show(f"+comp all s{seed}", run(data, feats=lambda p: with_columns(cache, p, comp), seeds=(seed,)))
for i in range(6):
    show(f"+comp[{i}] s0", run(data, feats=lambda p, i=i: with_columns(cache, p, lambda q: comp(q)[:, i], i)))
