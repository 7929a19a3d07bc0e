import numpy as np
from harness import *
from feats import comp
d = load()
C = {}
def withcomp(p, idx):
    k = id(p)
    if k not in C: C[k] = comp(p)
    return np.column_stack([p["rows"], C[k][:, list(idx)]])
for name, f in [("base", lambda p: p["rows"]), ("c2", lambda p: withcomp(p, [2])), ("c4", lambda p: withcomp(p, [4])),
                ("c24", lambda p: withcomp(p, [2, 4])), ("c245", lambda p: withcomp(p, [2, 4, 5])), ("c1245", lambda p: withcomp(p, [1, 2, 4, 5]))]:
    rs = [run(d, feats=f, seeds=(s,)) for s in range(5)]
    print(name, " ".join(f"{r['R@10']:.4f}" for r in rs), f"mean {np.mean([r['R@10'] for r in rs]):.4f}",
          "multi", f"{np.mean([r['cat']['multi-hop'] if 'multi-hop' in r['cat'] else list(r['cat'].values())[0] for r in rs]):.3f}", flush=True)
