"""Two trees' bulk-write time with precomputed vectors, alternating, for a before/after check.

    python benchmarks/speed/write_path_paired.py BEFORE_TREE AFTER_TREE [--n 3000] [--rounds 2]

Each round runs each tree once (in its own process, ``PYTHONPATH`` = that tree), in turns:
``store_many`` of N memories in calls of 500, vectors given (so the embedder does no work),
best of 3 into a fresh file, once without ``type`` (the classifier runs) and once with it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

WORKER = r"""
import sys, tempfile, time
import numpy as np
from localmem import MemoryStore
n, typed = int(sys.argv[1]), sys.argv[2] == "typed"
rng = np.random.default_rng(1)
items = []
for i in range(n):
    v = rng.normal(size=384)
    item = {"content": f"note {i} about topic {i % 17} and the plan {i % 5}", "tags": ["a", f"t{i % 9}"],
            "embedding": (v / np.linalg.norm(v)).astype("float32").tolist()}
    if typed:
        item["type"] = "Context"
    items.append(item)
best = float("inf")
for _ in range(3):
    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore(folder + "/x.db", embedder="hash")
        started = time.perf_counter()
        for k in range(0, n, 500):
            store.store_many(items[k:k + 500])
        best = min(best, time.perf_counter() - started)
        store.close()
print(f"{best:.3f}")
"""


def run(tree: str, n: int, variant: str) -> float:
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, "-c", WORKER, str(n), variant], env=env, capture_output=True,
                         text=True, check=True, cwd=tree)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for variant in ("untyped", "typed"):
        pairs = [(run(args.before, args.n, variant), run(args.after, args.n, variant))
                 for _ in range(args.rounds)]
        shown = ", ".join(f"{b:.3f} -> {a:.3f} s" for b, a in pairs)
        ratio = sorted(a / b for b, a in pairs)[len(pairs) // 2]
        print(f"{variant}: {shown}; after/before {ratio:.2f}")


if __name__ == "__main__":
    main()
