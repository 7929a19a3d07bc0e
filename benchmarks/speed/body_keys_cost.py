"""What refusing a key given twice costs a request body's parse (``decode_json(unique_keys=True)``,
as ``request_body.parse_json_object`` does since branch audit9), against the plain parse, taking
turns in one process on two body shapes; the medians' ratio (not absolute times: a shared machine).

    python benchmarks/speed/body_keys_cost.py [--turns 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localmem.validation import decode_json  # noqa: E402


def shapes() -> dict[str, dict]:
    fields = {"id": "x" * 36, "content": "y" * 400, "tags": ["a", "b"], "metadata": {"k": 1, "j": "z"},
              "importance": 0.5, **{f"f{i}": i for i in range(15)}}
    return {"200 memories with 384-d embeddings": {"items": [{**fields, "embedding": [0.01] * 384}] * 200},
            "500 memories, text only": {"memories": [fields] * 500}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=15, help="parses of each kind per shape (default 15)")
    args = parser.parse_args()
    for name, body in shapes().items():
        raw = json.dumps(body).encode()
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.turns):
            for unique in (False, True):
                start = time.perf_counter()
                decode_json(raw, "body", unique_keys=unique)
                times[unique].append(time.perf_counter() - start)
        ratio = statistics.median(times[True]) / statistics.median(times[False])
        print(json.dumps({"shape": name, "body_kb": len(raw) // 1024, "turns": args.turns,
                          "ratio_unique_over_plain": round(ratio, 3)}))


if __name__ == "__main__":
    main()
