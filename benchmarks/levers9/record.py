"""Record cross-fitted pools (as train_learned_rank's nested(tuned, cross_fit=True)) with the
per-query-token best-match matrix of every candidate, and save the deltas for re-recording."""
import json, os, pickle, sys, time
from pathlib import Path
import numpy as np
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/benchmarks")
import locomo, train_learned_rank as T
from localmem import Config
from localmem.recall import pipeline, late_interaction
from localmem.storage.token_codes import query_matrix, similarities

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/levers9/pools.pkl")
DELTAS = Path("benchmarks/levers9/deltas.pkl")
best_cols = {}  # (query, memory id) -> column of best per query token
real_tm = late_interaction.token_matches

def recording_tm(backend, results, query_tokens, adapter=None):
    found = real_tm(backend, results, query_tokens, adapter)
    centre = backend.token_centre(record=False)
    dims = backend.dimensions
    query = query_matrix(query_tokens, centre, adapter)
    width = (dims + 7) // 8
    ids, counts, blobs = [], [], []
    for memory_id, tokens, codes in backend.conn.execute(backend.sql["token_codes_by_ids"],
                                                         {"ids": json.dumps([r["id"] for r in results])}):
        if isinstance(tokens, int) and tokens > 0 and isinstance(codes, bytes) and len(codes) == tokens * width:
            ids.append(memory_id); counts.append(tokens); blobs.append(codes)
    if ids:
        sim = similarities(query, sum(counts), b"".join(blobs), dims)
        best = np.maximum.reduceat(sim, np.cumsum([0] + counts[:-1]), axis=1)
        for j, mid in enumerate(ids):
            best_cols[(CURRENT[0], mid)] = best[:, j].astype(np.float32)
    return found
CURRENT = [None]
pipeline.token_matches = recording_tm

data = json.load(open(locomo.DEFAULT_DATA))
config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0", "SEARCH_WEIGHT_LEARNED": "0"})
store, questions = locomo.build_store(data, locomo.cached_embedder("auto"), ":memory:", config)
embedder = store._backend.meta("embedder")
adapter_data = T.AdapterData(store, questions)
convs = T.conversations(questions)
deltas = pickle.load(open(DELTAS, "rb")) if DELTAS.exists() else {}
meta = {mid: (json.loads(tags)[0] + "/" + dia, ts) for mid, tags, dia, ts in store.conn.execute(
    "SELECT id, tags, json_extract(metadata, '$.dia_id'), timestamp FROM memories")}

def delta(held):
    key = frozenset(held)
    if key not in deltas:
        t = time.time(); deltas[key] = T.fit_query_delta(adapter_data, embedder, key)
        pickle.dump(deltas, open(DELTAS, "wb")); print("delta", sorted(key), f"{time.time()-t:.0f}s", flush=True)
    return deltas[key]

real_lc = pipeline.learned_components
def record(asked, d):
    store.learned_model = T.placeholder_model(embedder, None, d)
    pools = []
    def rec(model, candidates, query, mention=None):
        p = pools[-1]
        p["ids"] = [c["memory"]["id"] for c in candidates]
        p["keys"] = [meta[i][0] for i in p["ids"]]
        p["final"] = np.array([c["final_score"] for c in candidates])
        p["rows"] = T.learned_rank.pool_features(candidates, query, mention)
        p["mention"] = mention
        return {}
    pipeline.learned_components = rec
    try:
        for q in asked:
            CURRENT[0] = q["question"]
            pools.append({"question": q, "evidence": {f"{q['conv_tag']}/{e}" for e in q["evidence"]},
                          "ids": [], "keys": [], "final": np.zeros(0), "rows": np.zeros((0, len(T.learned_rank.FEATURES)))})
            store.recall(q["question"], tags=[q["conv_tag"]], limit=20, adaptive_floor=False)
            p = pools[-1]
            p["best"] = [best_cols.get((q["question"], i)) for i in p["ids"]]
            p["labels"] = np.array([1.0 if k in p["evidence"] else 0.0 for k in p["keys"]])
    finally:
        pipeline.learned_components = real_lc
    return pools

out = {"test": {}, "train": {}}
for conv in convs:
    out["test"][conv] = record([q for q in questions if q["conv_tag"] == conv], delta({conv}))
    for other in convs:
        if other != conv:
            out["train"][(conv, other)] = record([q for q in questions if q["conv_tag"] == other], delta({conv, other}))
    print(conv, "recorded", flush=True)
out["ts"] = {k: ts for k, ts in meta.values()}
pickle.dump(out, open(OUT, "wb"))
print("saved", OUT)
