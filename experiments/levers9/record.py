"""Record the cross-fitted pools train_learned_rank.py trains its held-out trees on (its
record_pools, with each candidate's best match per query token), and keep the deltas."""
import json, os, pickle, sys, time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent.parent / "benchmarks" / "quality")]  # localmem; locomo.py, train_learned_rank.py
import locomo, train_learned_rank as T  # noqa: E402
from localmem import Config  # noqa: E402

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "pools.pkl"
DELTAS = HERE / "deltas.pkl"
data = json.load(open(locomo.DEFAULT_DATA, encoding="utf-8"))
config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0", "SEARCH_WEIGHT_LEARNED": "0"})
store, questions = locomo.build_store(data, locomo.cached_embedder("auto"), ":memory:", config)
embedder = store._backend.meta("embedder")
adapter_data = T.AdapterData(store, questions)
convs = T.conversations(questions)
deltas = pickle.load(open(DELTAS, "rb")) if DELTAS.exists() else {}


def delta(held):
    key = frozenset(held)
    if key not in deltas:
        started = time.time()
        deltas[key] = T.fit_query_delta(adapter_data, embedder, key)
        pickle.dump(deltas, open(DELTAS, "wb"))
        print("delta", sorted(key), f"{time.time() - started:.0f}s", flush=True)
    return deltas[key]


def record(conv, held):
    store.learned_model = T.placeholder_model(embedder, delta=delta(held))
    return T.record_pools(store, [q for q in questions if q["conv_tag"] == conv])


# As nested(tuned, cross_fit=True): each conversation asked with a delta trained without it,
# and the pools its trees train on asked with deltas trained without both.
out = {"test": {}, "train": {}}
for conv in convs:
    out["test"][conv] = record(conv, {conv})
    for other in convs:
        if other != conv:
            out["train"][(conv, other)] = record(other, {conv, other})
    print(conv, "recorded", flush=True)
pickle.dump(out, open(OUT, "wb"))
print("saved", OUT)
