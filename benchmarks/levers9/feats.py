import numpy as np

def token_matrix(p):
    """query tokens x candidates; candidates without codes get the column min."""
    cols = p["best"]
    have = [c for c in cols if c is not None]
    if not have:
        return None
    t = len(have[0])
    m = np.array([c if c is not None else np.full(t, np.nan) for c in cols], dtype=np.float64).T
    return m

def comp(p, top=20):
    """Complementarity / contrastive token features, per candidate."""
    n = len(p["labels"])
    out = np.zeros((n, 6))
    m = token_matrix(p)
    if m is None or n == 0:
        return out
    filled = np.where(np.isnan(m), np.nanmin(m), m)
    mu = filled.mean(1, keepdims=True); sd = filled.std(1, keepdims=True) + 1e-6
    z = (filled - mu) / sd
    out[:, 0] = z.mean(0)                       # contrastive MaxSim
    out[:, 1] = z.max(0)                        # best contrastive token
    poolmax = filled.max(1, keepdims=True)
    out[:, 2] = (filled >= poolmax - 1e-9).mean(0)  # share of query tokens this candidate wins
    # residual over the best other candidate by MaxSim (among top by final)
    maxsim = filled.mean(0)
    order = np.argsort(-maxsim)
    first, second = order[0], order[1] if n > 1 else order[0]
    for c in range(n):
        ref = filled[:, second if c == first else first]
        out[c, 3] = np.maximum(0, filled[:, c] - ref).mean()
    # residual over the max of the top-3 others (by final)
    top3 = np.argsort(-p["final"], kind="stable")[:4]
    for c in range(n):
        others = [i for i in top3 if i != c][:3]
        ref = filled[:, others].max(1)
        out[c, 4] = np.maximum(0, filled[:, c] - ref).mean()
    # weighted MaxSim: query tokens weighted by how discriminative they are across the pool
    w = sd[:, 0] / sd[:, 0].sum()
    out[:, 5] = (filled * w[:, None]).sum(0)
    out[np.array([c is None for c in p["best"]])] = 0.0
    return out
