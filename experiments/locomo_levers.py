"""Candidate recall levers, measured as rescoring of recall's own candidate pool.

Each question of the LoCoMo dev conversations is asked through
``MemoryStore.recall`` (default configuration, top 100 kept); each lever
then reorders that pool with one extra piece of evidence, and its R@10 is
reported overall, per conversation and per category beside the unchanged
order. A lever is only a candidate for the default when it helps in every
one of the five conversations. Vectors come from the on-disk cache
(benchmarks/.cache/), so after the first run this costs about a minute;
``--context-vectors`` also embeds every turn with its thread predecessor
(about two minutes more the first time).

The levers are general (no speaker names, question templates or category
switches): a memory's thread is its session, its neighbours are the turns
before and after it in that thread.

``--maxsim`` embeds every turn's tokens (int8, cached) for late interaction.

    python experiments/locomo_levers.py [--data PATH] [--context-vectors] [--maxsim]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "quality"))
import locomo  # noqa: E402  (sets up sys.path and the offline Hugging Face environment)
from localmem import Config  # noqa: E402

POOL = 100
WEIGHT_VECTOR = 0.35  # the default SEARCH_WEIGHT_VECTOR: a replaced cosine is re-weighted by it


def collect(data: list, embedder) -> tuple[list[dict], dict, dict]:
    """Recall's pool per question, every turn's vector, and thread neighbours by (conv, dia_id)."""
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    store, questions = locomo.build_store(data, embedder, ":memory:", config)
    vectors, neighbours, texts, contents = {}, {}, {}, {}
    for index, sample in enumerate(data):
        turns = locomo.turns_of(sample)
        items = [locomo.memory_item(t, index) for t in turns]
        for turn, vector in zip(turns, embedder.embed([i["content"] for i in items])):
            vectors[(index, turn["dia_id"])] = np.asarray(vector, dtype=np.float32)
        for j, (turn, item) in enumerate(zip(turns, items)):
            same = lambda k: 0 <= k < len(turns) and turns[k]["session"] == turn["session"]  # noqa: E731
            neighbours[(index, turn["dia_id"])] = (turns[j - 1]["dia_id"] if same(j - 1) else None,
                                                   turns[j + 1]["dia_id"] if same(j + 1) else None)
            contents[(index, turn["dia_id"])] = item["content"]
            texts[(index, turn["dia_id"])] = ((items[j - 1]["content"] + "\n") if same(j - 1) else "") \
                + item["content"]
    query_vectors = embedder.embed([q["question"] for q in questions])
    pools = []
    with store:
        for q, qv in zip(questions, query_vectors):
            response = store.recall(q["question"], tags=[q["conv_tag"]], limit=POOL, adaptive_floor=False)
            pools.append({
                **q, "conv": int(q["conv_tag"].split(":")[1]), "qv": np.asarray(qv, dtype=np.float32),
                "pool": [{"dia": r["memory"]["metadata"]["dia_id"],
                          "session": r["memory"]["metadata"].get("session"),
                          "score": r["final_score"], "vector": r["score_components"]["vector"]}
                         for r in response["results"]]})
    return pools, vectors, {"neighbours": neighbours, "texts": texts, "contents": contents}


Lever = Callable[[dict], list[str]]


def unchanged(q: dict) -> list[str]:
    return [c["dia"] for c in q["pool"]]


def rescored(q: dict, extra: Callable[[dict], float]) -> list[str]:
    ranked = sorted(q["pool"], key=lambda c: -(c["score"] + extra(c)))
    return [c["dia"] for c in ranked]


def session_evidence(weight: float) -> Lever:
    """A turn inherits ``weight`` × the best score of its session in the pool."""
    def lever(q: dict) -> list[str]:
        best: dict = collections.defaultdict(float)
        for c in q["pool"]:
            best[c["session"]] = max(best[c["session"]], c["score"])
        return rescored(q, lambda c: weight * best[c["session"]])
    return lever


def session_diversity(penalty: float) -> Lever:
    """Greedy: each further turn of an already-chosen session loses ``penalty``."""
    def lever(q: dict) -> list[str]:
        chosen, counts, rest = [], collections.Counter(), list(q["pool"])
        while rest and len(chosen) < 20:
            best = max(rest, key=lambda c: c["score"] - penalty * counts[c["session"]])
            rest.remove(best)
            chosen.append(best["dia"])
            counts[best["session"]] += 1
        return chosen
    return lever


def vector_swap(q: dict, cosine: Callable[[dict], float]) -> list[str]:
    """Replace the vector component by max(own cosine, the lever's cosine)."""
    return rescored(q, lambda c: WEIGHT_VECTOR * (max(c["vector"], cosine(c)) - c["vector"]))


def predecessor_mix(vectors: dict, info: dict, before: float, after: float) -> Lever:
    """The memory's vector plus ``before`` × its predecessor's (+ ``after`` × its successor's)."""
    def lever(q: dict) -> list[str]:
        def cosine(c: dict) -> float:
            key = (q["conv"], c["dia"])
            prev, nxt = info["neighbours"][key]
            v = vectors[key].copy()
            if prev:
                v += before * vectors[(q["conv"], prev)]
            if nxt:
                v += after * vectors[(q["conv"], nxt)]
            return max(0.0, float(v @ q["qv"]) / float(np.linalg.norm(v)))
        return vector_swap(q, cosine)
    return lever


def context_vector(context: dict) -> Lever:
    """The memory embedded together with its thread predecessor (its text first)."""
    def lever(q: dict) -> list[str]:
        return vector_swap(q, lambda c: max(0.0, float(context[(q["conv"], c["dia"])] @ q["qv"])))
    return lever


def vector_feedback(vectors: dict, top: int, weight: float) -> Lever:
    """Pseudo-relevance feedback: the query vector moved toward the mean of the top results."""
    def lever(q: dict) -> list[str]:
        feedback = np.mean([vectors[(q["conv"], c["dia"])] for c in q["pool"][:top]], axis=0)
        moved = q["qv"] + weight * feedback
        moved /= np.linalg.norm(moved)
        return vector_swap(q, lambda c: max(0.0, float(vectors[(q["conv"], c["dia"])] @ moved)))
    return lever


def maxsim(tokens: dict, query_tokens: dict, weight: float, bits: int = 8) -> Lever:
    """Late interaction as rescoring: mean over query tokens of the best cosine to a
    memory token (MaxSim), max-normalised over the pool, added at ``weight``.
    ``bits=1``: token vectors as signs only (48 bytes a token), cosine from Hamming."""
    def similarity(query: np.ndarray, doc: np.ndarray) -> float:
        if bits == 1:
            agree = (np.sign(query)[:, None, :] == np.sign(doc)[None, :, :]).mean(axis=2)
            return float((2 * agree - 1).max(axis=1).mean())
        return float((query @ doc.T).max(axis=1).mean())

    def lever(q: dict) -> list[str]:
        scores = {c["dia"]: similarity(query_tokens[q["question"]], tokens[(q["conv"], c["dia"])])
                  for c in q["pool"]}
        top = max(scores.values()) or 1.0
        return rescored(q, lambda c: weight * max(0.0, scores[c["dia"]]) / top)
    return lever


def measure(pools: list[dict], lever: Lever) -> tuple[float, dict, dict]:
    convs, cats = collections.defaultdict(list), collections.defaultdict(list)
    for q in pools:
        ranked = lever(q)[:10]
        score = len(q["evidence"] & set(ranked)) / len(q["evidence"])
        convs[q["conv"]].append(score)
        cats[locomo.CATEGORIES[q["category"]]].append(score)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return (mean([s for xs in convs.values() for s in xs]),
            {k: mean(v) for k, v in sorted(convs.items())}, {k: mean(v) for k, v in cats.items()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(locomo.DEFAULT_DATA))
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--maxsim", action="store_true",
                        help="also MaxSim over MiniLM token vectors (sentence-transformers; cached)")
    parser.add_argument("--context-vectors", action="store_true",
                        help="also embed each turn with its thread predecessor (a cached, one-off cost)")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.data).read_text())
    embedder = locomo.cached_embedder(args.embedder)
    pools, vectors, info = collect(data, embedder)
    levers: list[tuple[str, Lever]] = [("recall as it is (pool order)", unchanged)]
    levers += [(f"session evidence, weight {w}", session_evidence(w)) for w in (0.1, 0.3)]
    levers += [(f"session diversity, penalty {p}", session_diversity(p)) for p in (0.02, 0.05)]
    levers += [(f"vector + {b} x predecessor (+ {a} x successor)", predecessor_mix(vectors, info, b, a))
               for b, a in ((0.3, 0.0), (0.5, 0.0), (0.3, 0.2))]
    levers += [(f"vector feedback, top {t}, weight {w}", vector_feedback(vectors, t, w))
               for t, w in ((1, 0.5), (3, 0.2))]
    if args.context_vectors:
        keys = list(info["texts"])
        embedded = embedder.embed([info["texts"][k] for k in keys])
        context = {k: np.asarray(v, dtype=np.float32) for k, v in zip(keys, embedded)}
        levers.append(("context vector (turn embedded with its predecessor)", context_vector(context)))
    if args.maxsim:
        keys = list(info["texts"])
        contents = [info["contents"][k] for k in keys]
        tokens = dict(zip(keys, embedder.embed_with_tokens(contents)[1]))
        questions = sorted({q["question"] for q in pools})
        query_tokens = dict(zip(questions, embedder.embed_with_tokens(questions)[1]))
        per_memory = sum(t.shape[0] for t in tokens.values()) / len(tokens)
        print(f"token vectors: {per_memory:.1f} tokens a memory on average: int8 "
              f"{per_memory * embedder.dimensions / 1024:.1f} KiB, 1 bit "
              f"{per_memory * embedder.dimensions / 8 / 1024:.2f} KiB per memory\n")
        levers += [(f"MaxSim rescoring (int8 token vectors), weight {w}", maxsim(tokens, query_tokens, w))
                   for w in (0.1, 0.2, 0.35)]
        levers += [("MaxSim rescoring (1-bit token vectors), weight 0.2",
                    maxsim(tokens, query_tokens, 0.2, bits=1))]
    base_overall, base_convs, _ = measure(pools, unchanged)
    categories = list(locomo.CATEGORIES.values())
    print("| lever | R@10 | " + " | ".join(f"conv {c}" for c in base_convs) + " | "
          + " | ".join(categories) + " | worst conversation change | rescoring ms / query |")
    print("|---|---:|" + "---:|" * (len(base_convs) + len(categories)) + "---:|---:|")
    for label, lever in levers:
        started = time.perf_counter()
        overall, convs, cats = measure(pools, lever)
        per_query = (time.perf_counter() - started) * 1000 / len(pools)
        # Rounded as printed: a lever "helps" a conversation only by a visible margin.
        worst = min(round(convs[c], 3) - round(base_convs[c], 3) for c in convs)
        print(f"| {label} | {overall:.3f} | " + " | ".join(f"{convs[c]:.3f}" for c in convs) + " | "
              + " | ".join(f"{cats.get(c, float('nan')):.3f}" for c in categories)
              + f" | {worst:+.3f} | {per_query:.2f} |")
    print(f"\n{len(pools)} questions; pool of {POOL} per question from the default recall; "
          f"baseline R@10 {base_overall:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
