"""Where a bulk write's time goes: ``store_many`` with given vectors, stage by stage.

    python benchmarks/speed/write_stages.py [--n 10000] [--batch 5000] [--rounds 3]

Stores N of ingest.py's synthetic memories (about 40% with a ``type``, the
rest classified), each with a given unit vector, in calls of ``--batch``,
into a fresh file, and reports:

- the Python stages, timed by wrapping the functions the write path calls
  (validation as a whole, the classifier inside it, redaction -- which must
  not run at all unless asked -- vector validation, dedup keys, tag prefixes,
  metadata terms);
- every SQL statement's own time, from SQLite's profile hook (a statement's
  time includes the triggers it fires), and COMMIT;
- each insert trigger's price: the same write into a fresh file with that
  one trigger dropped, against the file with every trigger, alternating for
  ``--rounds`` rounds (median of the paired differences).

Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.speed.ingest import generate_memories  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402

INSERT_TRIGGERS = ("memory_changes_insert", "sync_tombstone_on_insert", "vector_codes_inserted")
# (module, attribute, stage): wrapped where the write path looks them up.
STAGES = (
    ("localmem.store", "build_row", "validation (build_row, with the classifier)"),
    ("localmem.storage.memory_fields", "classify", "  of which the classifier"),
    ("localmem.store", "redact_item", "redaction"),
    ("localmem.store", "validate_embedding", "vector validation"),
    ("localmem.storage.dedup_keys", "dedup_key", "dedup keys (hashing)"),
    ("localmem.storage.writes", "compute_tag_prefixes", "tag prefixes (Python)"),
    ("localmem.storage.writes", "metadata_index_terms", "metadata terms (Python)"),
    ("localmem.storage.writes", "affected_rows", "thread neighbours"),
    ("localmem.storage.vector_index", "check_calibration", "calibration check"),
)


def make_items(n: int) -> list[dict[str, Any]]:
    items = generate_memories(n, seed=7)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for item, vector in zip(items, vectors):
        item["embedding"] = vector
    return items


@contextlib.contextmanager
def wrapped_stages(totals: dict[str, float], counts: dict[str, int]) -> Iterator[None]:
    import importlib
    originals = []
    for module_name, attribute, stage in STAGES:
        module = importlib.import_module(module_name)
        original = getattr(module, attribute)

        def timed(*args: Any, _f: Callable[..., Any] = original, _s: str = stage, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                totals[_s] += time.perf_counter() - started
                counts[_s] += 1
        setattr(module, attribute, timed)
        originals.append((module, attribute, original))
    try:
        yield
    finally:
        for module, attribute, original in originals:
            setattr(module, attribute, original)


def write(folder: str, items: list[dict[str, Any]], batch: int, *, drop: str | None = None,
          profile: Callable[[str, int], None] | None = None) -> float:
    store = MemoryStore(folder + f"/w-{drop or 'all'}-{time.monotonic_ns()}.db", embedder="hash",
                        config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
    if drop:
        store.conn.execute(f"DROP TRIGGER {drop}")
    if profile:
        store.conn.set_profile(profile)
    started = time.perf_counter()
    for start in range(0, len(items), batch):
        store.store_many(items[start:start + batch])
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def statement_name(sql: str) -> str:
    text = " ".join(sql.split())
    return text[:70]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = make_items(args.n)
    with tempfile.TemporaryDirectory() as folder:
        write(folder, items[:500], 500)  # imports and first-use costs out of the way
        totals: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        statements: dict[str, float] = defaultdict(float)
        executions: dict[str, int] = defaultdict(int)

        def profile(sql: str, nanoseconds: int) -> None:
            statements[statement_name(sql)] += nanoseconds / 1e9
            executions[statement_name(sql)] += 1
        with wrapped_stages(totals, counts):
            wall = write(folder, items, args.batch, profile=profile)
        plain = statistics.median(write(folder, items, args.batch) for _ in range(args.rounds))
        print(f"{args.n:,} memories in calls of {args.batch:,}: {plain:.2f} s unprofiled "
              f"({args.n / plain:,.0f}/s); {wall:.2f} s with the stage timers")
        print("\n| stage | s | share of the unprofiled run | calls |\n|---|---:|---:|---:|")
        for _module, _attribute, stage in STAGES:
            print(f"| {stage} | {totals[stage]:.3f} | {totals[stage] / plain:.1%} | {counts[stage]:,} |")
        print("\n| SQL statement (with the triggers it fires) | s | share | runs |\n|---|---:|---:|---:|")
        for name, seconds in sorted(statements.items(), key=lambda kv: -kv[1])[:16]:
            print(f"| `{name}` | {seconds:.3f} | {seconds / plain:.1%} | {executions[name]:,} |")
        print(f"\n| trigger dropped | s with all | s without | price (median of {args.rounds} pairs) | share |"
              "\n|---|---:|---:|---:|---:|")
        for trigger in INSERT_TRIGGERS:
            pairs = []
            for _ in range(args.rounds):
                pairs.append((write(folder, items, args.batch), write(folder, items, args.batch, drop=trigger)))
            price = statistics.median(a - b for a, b in pairs)
            print(f"| {trigger} | {statistics.median(a for a, _ in pairs):.2f} | "
                  f"{statistics.median(b for _, b in pairs):.2f} | {price:.3f} | {price / plain:.1%} |")


if __name__ == "__main__":
    main()
