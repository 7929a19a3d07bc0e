"""Before/after check for a speed change: every answer of scale.py's workload, compared.

    python benchmarks/speed/scale_answers.py dump answers.json     # this tree's answers (100k tier)
    python benchmarks/speed/scale_answers.py compare before.json after.json

``dump`` recalls the 200 queries of ``scale.py --tiers 100k --queries 200`` (the
same store from benchmarks/.cache/, the same query vectors, the same five modes)
and writes each whole response without its ``query_time_ms``. ``compare`` says
whether two dumps hold the same results in the same order with the same keys and
values, and the largest difference between two numbers (0.0: bit for bit).
Run ``dump`` from each tree (its own copy of this file: scale.py imports the
``localmem`` of the tree it sits in).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.speed import scale  # noqa: E402
import localmem  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402


def dump(path: str, tier: str, queries: int) -> None:
    store = MemoryStore(scale.CACHE / f"scale-{scale.TIERS[tier]}.db", embedder="none",
                        config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}), clock=lambda: scale.NOW)
    answers = []
    for mode, kwargs, vector in scale.workload(store, queries):
        response = store.recall(embedding=vector, **kwargs)
        response.pop("query_time_ms", None)
        answers.append({"mode": mode, "response": response})
    store.close()
    with open(path, "w") as out:
        json.dump(answers, out)
    print(f"{len(answers)} answers from {localmem.__file__} -> {path}")


def differences(a: Any, b: Any, where: str, found: list[str]) -> float:
    """The largest |a - b| over matching numbers; anything else that differs is listed in ``found``."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return abs(float(a) - float(b))
    if type(a) is not type(b):
        found.append(f"{where}: {a!r} vs {b!r}")
        return 0.0
    if isinstance(a, dict):
        if list(a) != list(b):
            found.append(f"{where}: keys {list(a)} vs {list(b)}")
            return 0.0
        return max((differences(a[k], b[k], f"{where}.{k}", found) for k in a), default=0.0)
    if isinstance(a, list):
        if len(a) != len(b):
            found.append(f"{where}: {len(a)} vs {len(b)} items")
            return 0.0
        return max((differences(x, y, f"{where}[{i}]", found) for i, (x, y) in enumerate(zip(a, b))), default=0.0)
    if a != b:
        found.append(f"{where}: {a!r} vs {b!r}")
    return 0.0


def compare(before: str, after: str) -> int:
    with open(before) as one, open(after) as two:
        a, b = json.load(one), json.load(two)
    found: list[str] = []
    largest = differences(a, b, "answers", found)
    results = sum(len(x["response"]["results"]) for x in a)
    print(f"{len(a)} answers, {results} results; other differences: {len(found)}; "
          f"largest numeric difference: {largest:.3g}")
    for line in found[:20]:
        print("  " + line)
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("dump")
    one.add_argument("path")
    one.add_argument("--tier", default="100k", choices=sorted(scale.TIERS))
    one.add_argument("--queries", type=int, default=200)
    two = sub.add_parser("compare")
    two.add_argument("before")
    two.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.path, args.tier, args.queries)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
