"""What the token_residual feature costs a recall: ``learned_rank._token_residual`` against
the whole ``pool_features`` call it is part of, on the same synthetic pool, alternating.

A pool of ``--candidates`` candidates (about 140 in a recall at 100k) whose token matches
cover a ``--tokens``-token query; every candidate in a thread of four, as dialog turns are.

    python experiments/token_residual_cost.py [--candidates 140] [--tokens 12] [--rounds 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from localmem.recall.late_interaction import TokenMatch
from localmem.recall.learned_rank import _token_residual, pool_features


def synthetic_pool(candidates: int, tokens: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    pool = []
    for pk in range(candidates):
        per_token = rng.uniform(-0.2, 0.9, tokens)
        match = TokenMatch(float(per_token.mean()), float(per_token.max()), float(np.median(per_token)),
                           float((per_token > 0.5).mean()), float((per_token > 0.7).mean()), 30, per_token)
        pool.append({"id": f"m{pk}", "_pk": pk, "final_score": float(rng.uniform()), "_similarity": 0.3,
                     "_token_match": match,
                     "score_components": {"vector": float(rng.uniform()), "keyword": float(rng.uniform()),
                                          "tag": 0.0},
                     "memory": {"content": "a turn", "metadata": {"thread": f"t{pk // 4}"}, "tags": [],
                                "context": "default", "timestamp": f"2024-01-{1 + pk % 28:02d}T00:00:00+00:00"}})
    return pool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=140)
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    pool = synthetic_pool(args.candidates, args.tokens)
    matches = [c["_token_match"] for c in pool]
    final = np.array([c["final_score"] for c in pool])
    query = " ".join(["word"] * args.tokens)
    residual_us, features_us = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        _token_residual(matches, final)
        residual_us.append((time.perf_counter() - started) * 1e6)
        started = time.perf_counter()
        pool_features(pool, query)
        features_us.append((time.perf_counter() - started) * 1e6)
    residual, features = statistics.median(residual_us), statistics.median(features_us)
    print(f"{args.candidates} candidates, {args.tokens} query tokens, {args.rounds} alternating rounds: "
          f"token_residual {residual:.0f} µs, pool_features (all {len(pool_features(pool, query)[0])} "
          f"features, the residual included) {features:.0f} µs; residual ÷ pool_features {residual / features:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
