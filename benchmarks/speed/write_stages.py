"""Where a bulk write's time goes: ``store_many`` with given vectors, stage by stage.

    python benchmarks/speed/write_stages.py [--n 10000] [--batch 5000] [--rounds 3] [--no-triggers]
                                            [--edges 2000]

Stores N of ingest.py's synthetic memories (about 40% with a ``type``, the
rest classified), each with a given unit vector, in calls of ``--batch``,
into a fresh file, and reports:

Times are CPU seconds of this process (``time.process_time``: on a shared machine the wall
clock is mostly other work's), except SQLite's own per-statement times, which are its wall clock.

- the Python stages, timed by wrapping the functions the write path calls
  (validation as a whole, the classifier inside it, redaction -- which must
  not run at all unless asked -- vector validation, dedup keys, tag prefixes,
  metadata terms);
- every SQL statement's own time, from SQLite's profile hook (a statement's
  time includes the triggers it fires), and COMMIT;
- each insert trigger's price: the same write into a fresh file with that
  one trigger dropped against one with every trigger; each of ``--rounds``
  rounds writes with every trigger, then without each in turn (the median
  of the rounds' differences). ``--no-triggers`` skips this part;
- ``--edges`` ``associate()`` calls into the stored memories (one transaction each, as a user
  pays them): every statement's time, and the edge log trigger's price, by its own statement's
  time and by the calls' CPU time.

Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import random
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
# (module or module:Class, attribute, stage): wrapped where the write path looks them up.
STAGES = (
    ("localmem.storage.memory_fields", "build_row", "validation (build_row, with the classifier)"),
    ("localmem.storage.memory_fields", "classify", "  of which the classifier"),
    ("localmem.storage.memory_fields", "with_tags_read", "tag reading"),
    ("localmem.privacy.redact", "redact", "redaction (calls of privacy.redact)"),
    ("localmem.store", "validate_embedding", "vector validation"),
    ("localmem.storage.dedup_keys", "row_key", "dedup keys (hashing)"),
    ("localmem.storage.records:MemoryRow", "bindings", "row bindings (tags and metadata JSON)"),
    ("localmem.storage.writes", "compute_tag_prefixes", "tag prefixes (Python)"),
    ("localmem.storage.writes", "metadata_index_terms", "metadata terms (Python)"),
    ("localmem.storage.writes", "affected_rows", "thread neighbours (query)"),
    ("localmem.storage.vector_index", "check_calibration", "calibration check (recalibrates as the store doubles)"),
)


def make_items(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """n of ingest.py's synthetic memories, each with a given random unit vector."""
    items = generate_memories(n, seed=seed)
    rng = np.random.default_rng(seed)
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
        module_name, _, owner = module_name.partition(":")  # "module:Class" for a method
        module = importlib.import_module(module_name)
        if owner:
            module = getattr(module, owner)
        original = getattr(module, attribute)

        def timed(*args: Any, _f: Callable[..., Any] = original, _s: str = stage, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return _f(*args, **kwargs)
            finally:
                totals[_s] += time.process_time() - started
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
    started = time.process_time()
    for start in range(0, len(items), batch):
        store.store_many(items[start:start + batch])
    elapsed = time.process_time() - started
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
    parser.add_argument("--edges", type=int, default=2000, help="associate() calls to time (0: none)")
    parser.add_argument("--no-triggers", dest="triggers", action="store_false",
                        help="skip pricing the insert triggers (it stores the batch 2 x 3 x rounds times)")
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
        print(f"{args.n:,} memories in calls of {args.batch:,}: {plain:.2f} CPU s unprofiled "
              f"({args.n / plain:,.0f}/s per CPU second); {wall:.2f} CPU s with the stage timers")
        print("\n| stage | s | share of the unprofiled run | calls |\n|---|---:|---:|---:|")
        for _module, _attribute, stage in STAGES:
            print(f"| {stage} | {totals[stage]:.3f} | {totals[stage] / plain:.1%} | {counts[stage]:,} |")
        print("\n| SQL statement (with the triggers it fires) | s | share | runs |\n|---|---:|---:|---:|")
        for name, seconds in sorted(statements.items(), key=lambda kv: -kv[1])[:16]:
            print(f"| `{name}` | {seconds:.3f} | {seconds / plain:.1%} | {executions[name]:,} |")
        if args.edges:
            edge_stages(folder, items, args)
        if not args.triggers:
            return
        print(f"\n| trigger dropped | CPU s, every trigger | without this one | price (median of "
              f"{args.rounds} rounds) | share |\n|---|---:|---:|---:|---:|")
        runs: dict[str | None, list[float]] = defaultdict(list)
        for _ in range(args.rounds):  # each round writes with every trigger, then without each in turn
            for drop in (None, *INSERT_TRIGGERS):
                runs[drop].append(write(folder, items, args.batch, drop=drop))
        for trigger in INSERT_TRIGGERS:
            price = statistics.median(a - b for a, b in zip(runs[None], runs[trigger]))
            print(f"| {trigger} | {statistics.median(runs[None]):.3f} | {statistics.median(runs[trigger]):.3f} "
                  f"| {price:.3f} | {price / plain:.1%} |")


def associate_all(folder: str, items: list[dict[str, Any]], count: int, drop: str | None,
                  profile: Callable[[str, int], None]) -> float:
    """Seconds for ``count`` associate() calls between random pairs of the stored ``items``."""
    store = MemoryStore(folder + f"/e-{time.monotonic_ns()}.db", embedder="hash",
                        config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
    store.store_many(items)
    if drop:
        store.conn.execute(f"DROP TRIGGER {drop}")
    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories")]
    rng = random.Random(3)
    pairs = [rng.sample(ids, 2) for _ in range(count)]
    store.conn.set_profile(profile)
    started = time.process_time()
    for a, b in pairs:
        store.associate(a, b, type="RELATES_TO", strength=0.5)
    elapsed = time.process_time() - started
    store.close()
    return elapsed


def edge_stages(folder: str, items: list[dict[str, Any]], args: argparse.Namespace) -> None:
    base = items[:min(len(items), 5000)]
    spent: dict[str, float] = defaultdict(float)

    def profile(sql: str, nanoseconds: int) -> None:
        spent[statement_name(sql)] += nanoseconds / 1e9
    wall = associate_all(folder, base, args.edges, None, profile)
    print(f"\n{args.edges:,} associate() calls among {len(base):,} memories: {wall:.2f} CPU s "
          f"({args.edges / wall:,.0f}/s)\n\n| statement | s | share |\n|---|---:|---:|")
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:8]:
        print(f"| `{name}` | {seconds:.3f} | {seconds / wall:.1%} |")
    pairs, walls = [], []
    for _ in range(args.rounds):
        times, elapsed = [], []
        for drop in (None, "sync_edge_on_insert"):
            upsert = [0.0]

            def upsert_only(sql: str, nanoseconds: int) -> None:
                if sql.startswith("INSERT INTO edges"):
                    upsert[0] += nanoseconds / 1e9
            elapsed.append(associate_all(folder, base, args.edges, drop, upsert_only))
            times.append(upsert[0])
        pairs.append(times)
        walls.append(elapsed)
    price = statistics.median(a - b for a, b in pairs)
    wall_price = statistics.median(a - b for a, b in walls)
    print(f"\nsync_edge_on_insert (the edge log): the edge upsert {statistics.median(a for a, _ in pairs):.3f} s "
          f"with it, {statistics.median(b for _, b in pairs):.3f} s without; price {price:.3f} s, "
          f"{price / wall:.1%} of the calls' CPU time. CPU time of the calls (which adds the pages the log "
          f"dirties, written at COMMIT): {statistics.median(a for a, _ in walls):.2f} s with it, "
          f"{statistics.median(b for _, b in walls):.2f} s without, price {wall_price:.2f} s "
          f"(median of {args.rounds} pairs)")


if __name__ == "__main__":
    main()
