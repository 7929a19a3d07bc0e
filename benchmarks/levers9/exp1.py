import numpy as np
from harness import *
from feats import comp
d = load()
show("baseline s0", run(d))
show("baseline s1", run(d, seeds=(1,)))
show("baseline s2", run(d, seeds=(2,)))
show("bag 5 seeds", run(d, seeds=(0,1,2,3,4)))
C = {}
def withcomp(p, idx=range(6)):
    k = id(p)
    if k not in C: C[k] = comp(p)
    return np.column_stack([p["rows"], C[k][:, list(idx)]])
for s in (0, 1, 2):
    show(f"+comp all s{s}", run(d, feats=withcomp, seeds=(s,)))
for i in range(6):
    show(f"+comp[{i}] s0", run(d, feats=lambda p, i=i: withcomp(p, [i])))
