import pickle, sys, numpy as np, lightgbm
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/benchmarks")
import locomo
from localmem import Config
from localmem.recall import learned_rank
PARAMS = dict(objective="lambdarank", num_leaves=7, min_child_samples=50,
              subsample=0.8, subsample_freq=1, colsample_bytree=0.8, reg_lambda=1.0, verbose=-1)
W = Config().weight_learned
CATS = locomo.CATEGORIES

def load(path="benchmarks/levers9/pools.pkl"):
    return pickle.load(open(path, "rb"))

def fit(pools, feats, seed=0, rounds=100, lr=0.15, params=PARAMS):
    r = lightgbm.LGBMRanker(n_estimators=rounds, random_state=seed, learning_rate=lr, **params)
    r.fit(np.concatenate([feats(p) for p in pools]), np.concatenate([p["labels"] for p in pools]),
          group=[len(p["labels"]) for p in pools])
    return r

def score(pool, raw):
    top = np.argsort(-pool["final"], kind="stable")[:learned_rank.LEARNED_TOP]
    learned = np.zeros(len(pool["final"]))
    if len(top):
        learned[top] = 1 / (1 + np.exp(-raw[top]))
    s = pool["final"] + W * learned
    order = np.argsort(-s, kind="stable")
    return locomo.metrics([pool["keys"][i] for i in order], pool["evidence"])

def run(data, feats=lambda p: p["rows"], seeds=(0,), rounds=100, lr=0.15, params=PARAMS, verbose=False):
    rows = []
    for conv, tested in data["test"].items():
        train = [p for (c, o), ps in data["train"].items() if c == conv for p in ps]
        models = [fit(train, feats, s, rounds, lr, params) for s in seeds]
        for p in tested:
            if len(p["labels"]) == 0:
                rows.append((p, locomo.metrics([], p["evidence"]))); continue
            raw = np.mean([m.predict(feats(p), raw_score=True) for m in models], axis=0)
            rows.append((p, score(p, raw)))
    r10 = np.mean([m["R@10"] for _, m in rows])
    out = {"R@10": r10, "R@1": np.mean([m["R@1"] for _, m in rows]), "MRR": np.mean([m["MRR"] for _, m in rows])}
    out["conv"] = {c: np.mean([m["R@10"] for p, m in rows if p["question"]["conv_tag"] == c]) for c in data["test"]}
    out["cat"] = {CATS[k]: np.mean([m["R@10"] for p, m in rows if p["question"]["category"] == k]) for k in CATS}
    return out

def show(name, o):
    print(f"{name:30s} R@10 {o['R@10']:.4f} R@1 {o['R@1']:.3f} MRR {o['MRR']:.3f} | " +
          " ".join(f"{v:.3f}" for v in o["conv"].values()) + " | " +
          " ".join(f"{k[:5]} {v:.3f}" for k, v in o["cat"].items()), flush=True)
