"""What the work added to a bulk write since an older tree costs: each part removed in turn.

    python benchmarks/speed/write_additions.py OLD_TREE [--n 10000] [--rounds 3]

In this process (this tree's ``localmem``), ``store_many`` of N of ingest.py's synthetic
memories with given vectors, in calls of 5,000, into a fresh file, CPU seconds of the process
(on a shared machine the wall clock is mostly other work's). Each round writes them with
everything, then without computing dedup keys (a constant key is written instead), then
with OLD_TREE's ``localmem/classify.py`` instead of this tree's, then without the two sync
insert triggers (``memory_changes_insert``, ``sync_tombstone_on_insert``). Prints the median
over rounds and what each removal saves. Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.speed.write_stages import make_items  # noqa: E402
from localmem import MemoryStore  # noqa: E402
from localmem.storage import dedup_keys, memory_fields  # noqa: E402

SYNC_INSERT_TRIGGERS = ("memory_changes_insert", "sync_tombstone_on_insert")
VARIANTS = ("everything", "no dedup key hashing", "the old tree's classifier", "no sync insert triggers")


def old_classifier(tree: Path) -> Any:
    spec = importlib.util.spec_from_file_location("old_classify", tree / "localmem" / "classify.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no localmem/classify.py in {tree}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.classify


def write(items: list[dict[str, Any]], variant: str, classify_old: Any) -> float:
    saved = dedup_keys.row_key, memory_fields.classify
    if variant == "no dedup key hashing":
        dedup_keys.row_key = lambda row, thread=None: b"\0" * 16
    elif variant == "the old tree's classifier":
        memory_fields.classify = classify_old
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = MemoryStore(folder + "/w.db", embedder="hash")
            if variant == "no sync insert triggers":
                for trigger in SYNC_INSERT_TRIGGERS:
                    store.conn.execute(f"DROP TRIGGER {trigger}")
            started = time.process_time()
            for start in range(0, len(items), 5000):
                store.store_many(items[start:start + 5000])
            elapsed = time.process_time() - started
            store.close()
            return elapsed
    finally:
        dedup_keys.row_key, memory_fields.classify = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_tree", type=Path)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = make_items(args.n)
    classify_old = old_classifier(args.old_tree)
    runs: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            runs[variant].append(write(items, variant, classify_old))
    base = statistics.median(runs["everything"])
    print(f"{args.n:,} memories, median of {args.rounds} rounds, CPU seconds\n\n"
          "| variant | CPU s | saves |\n|---|---:|---:|")
    for variant in VARIANTS:
        seconds = statistics.median(runs[variant])
        print(f"| {variant} | {seconds:.2f} | {(base - seconds) / base:+.1%} |")


if __name__ == "__main__":
    main()
