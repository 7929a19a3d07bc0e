"""Ingest throughput benchmark for localmem.

Generates realistic synthetic memories and times, each in a fresh temporary
database file:

1. ``store_many`` with precomputed unit vectors, in calls of ``--batch`` items;
2. ``store()`` one memory at a time with precomputed vectors (``--single-n``);
3. ``store_many`` with the hash embedder (``embedder="hash"``);
4. ``store_many`` with the real model (``embedder="auto"``, offline MiniLM) on
   ``--model-n`` memories, plus the pure ``embedder.embed`` throughput on the
   same texts, so the SQLite share is visible.

A same-run baseline (plain apsw inserts of the same rows into a one-table
file, one transaction) is measured before every case run; each localmem figure
is reported as a ratio to the baseline, because the machine is shared and
noisy. Every case runs ``--repeat`` times (interleaved); the fastest run counts. The table is printed and written into ``docs/results/history.md`` between
the ``<!-- ingest:start -->`` / ``<!-- ingest:end -->`` markers.

5. with ``--existing N``: case 1 again, but into a copy of a store already
   holding N memories (built once with the same generator and cached in
   ``benchmarks/.cache/``), so index maintenance at size is in the figure.

    python benchmarks/speed/ingest.py [--n 5000] [--model-n 500] [--repeat 3] [--no-model] [--profile]
                                [--existing 100000]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import importlib.metadata
import io
import json
import os
import platform
import pstats
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import apsw  # noqa: E402
import numpy as np  # noqa: E402

from localmem.storage.migrations import LATEST_VERSION  # noqa: E402
from localmem.store import MemoryStore  # noqa: E402
from benchmarks.common.results_file import write_section  # noqa: E402

DIMS = 384
SEED = 20240601
CACHE = ROOT / "benchmarks" / ".cache"

# --------------------------------------------------------------------------
# Synthetic memories
# --------------------------------------------------------------------------

PROJECTS = ["alpha", "beta", "gamma", "delta", "atlas", "orion", "phoenix", "nimbus"]
CHANNELS = ["general", "eng-backend", "eng-frontend", "incidents", "random", "design", "data", "releases"]
PEOPLE = ["alice", "bob", "carol", "dmitri", "erin", "farah", "gustavo", "hana", "ines", "jun", "kofi", "lena"]
SERVICES = ["billing service", "auth gateway", "search indexer", "notification worker", "ingest pipeline",
            "mobile API", "admin dashboard", "export job", "recommendation engine", "payments webhook"]
TECH = ["Postgres", "SQLite", "Redis", "Kafka", "RabbitMQ", "gRPC", "GraphQL", "FastAPI", "Django", "React",
        "Svelte", "Rust", "Go", "TypeScript", "Terraform", "Kubernetes", "Nomad", "DuckDB", "ClickHouse", "S3"]
LANGS = ["python", "rust", "go", "typescript", "sql"]
REASONS = ["it halves the p99 latency", "the team already knows it", "licensing is simpler",
           "it removes a moving part", "the managed offering is cheaper", "migrations are easier to review",
           "it has better observability", "the old one is end-of-life next quarter",
           "it keeps the deploy under five minutes", "on-call asked for fewer alerts"]
SYMPTOMS = ["times out after 30 seconds", "returns duplicate rows", "leaks file descriptors",
            "double-charges on retry", "drops messages under load", "crashes on empty input",
            "serves stale cache entries", "deadlocks during nightly backfill", "rounds currency wrongly",
            "mixes up time zones around DST"]
CAUSES = ["a missing index on the join column", "an off-by-one in the pagination cursor",
          "a race between two workers", "a retry loop without idempotency keys", "the connection pool size of 5",
          "UTC vs local time in the cron job", "an unbounded in-memory queue", "a stale feature flag",
          "float arithmetic on money", "a regex that backtracks on long lines"]
FIXES = ["added the index", "switched to keyset pagination", "took an advisory lock",
         "added idempotency keys", "raised the pool to 20", "stored everything in UTC",
         "bounded the queue at 10k", "removed the flag", "moved to integer cents", "anchored the regex"]
PREFS = ["tabs over spaces in Makefiles", "short PRs under 300 lines", "squash merges", "type hints everywhere",
         "dark mode in the editor", "pytest over unittest", "explicit error types", "async standups on Slack",
         "meetings before noon", "plain SQL over an ORM", "feature flags for risky changes",
         "written design docs before coding", "concise answers with code first", "British spelling in docs"]
MEETINGS = ["standup", "sprint planning", "retro", "design review", "1:1", "incident review",
            "quarterly planning", "customer call", "architecture sync", "hiring debrief"]
OUTCOMES = ["agreed to cut scope for the beta", "moved the launch by one week", "assigned the migration to {p}",
            "asked {p} to write the RFC", "dropped the legacy endpoint", "kept the current on-call rotation",
            "decided to pair on the flaky tests", "will revisit the budget next month",
            "approved the hiring plan", "picked the vendor with the better SLA"]
HABITS = ["runs the full test suite before pushing", "reviews PRs first thing every morning",
          "writes a weekly summary on Fridays", "keeps a daily log of decisions",
          "rebases instead of merging main", "checks the error dashboard after every deploy"]
INSIGHTS = ["most support tickets come from the export flow", "cold starts dominate the mobile latency",
            "half the alerts fire on Mondays after the batch job", "users rarely change the default settings",
            "the cache hit rate drops when the catalog is reindexed", "small PRs get reviewed three times faster"]
CONTEXTS = ["{p} is on parental leave until {m}", "the {s} is owned by the platform team",
            "staging shares its database with the QA environment", "{p} is the contact for the {proj} customer pilot",
            "the {s} runs on two nodes in eu-west-1", "we are in a code freeze until {m}"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
TAIL = ["Follow up next week.", "See the ticket for details.", "{p} has the context.", "Documented in the wiki.",
        "Needs a second opinion from {p}.", "Low risk, easy to roll back.", "Mention it in the retro.", ""]

TOPIC_TAGS = ["topic:database", "topic:performance", "topic:security", "topic:testing", "topic:infra",
              "topic:ux", "topic:hiring", "topic:billing", "source:github:pr", "source:github:issue",
              "source:jira", "source:email", "env:prod", "env:staging", "lang:python", "lang:rust",
              "lang:typescript", "personal:preference", "team:platform", "team:mobile", "team:data"]


def _fill(rng: random.Random, text: str) -> str:
    return text.format(p=rng.choice(PEOPLE).title(), m=rng.choice(MONTHS), s=rng.choice(SERVICES),
                       proj=rng.choice(PROJECTS).title())


def _sentence(rng: random.Random, kind: str) -> tuple[str, str | None]:
    """One memory text of the given kind, and a type the client would pass (or None)."""
    p, s, proj = rng.choice(PEOPLE).title(), rng.choice(SERVICES), rng.choice(PROJECTS).title()
    if kind == "decision":
        a, b = rng.sample(TECH, 2)
        text = rng.choice([
            f"Decided to use {a} instead of {b} for the {s} because {rng.choice(REASONS)}.",
            f"We are going with {a} for the {s}; {b} was considered but {rng.choice(REASONS)}.",
            f"Team chose {a} over {b} in project {proj} since {rng.choice(REASONS)}.",
            f"Opted for {a} on the {s}. {p} signed off after benchmarking against {b}.",
        ])
        kind_type = "Decision"
    elif kind == "preference":
        text = rng.choice([
            f"{p} prefers {rng.choice(PREFS)}.",
            f"User prefers {rng.choice(PREFS)} and {rng.choice(PREFS)}.",
            f"Always use {rng.choice(PREFS)} in project {proj}, per {p}.",
            f"{p} likes {rng.choice(PREFS)} better than the alternative.",
        ])
        kind_type = "Preference"
    elif kind == "bug":
        i = rng.randrange(len(CAUSES))
        text = rng.choice([
            f"Bug in the {s}: it {rng.choice(SYMPTOMS)}. Root cause was {CAUSES[i]}; we {FIXES[i]}.",
            f"Discovered that the {s} {rng.choice(SYMPTOMS)} because of {CAUSES[i]}.",
            f"Fixed {proj.upper()}-{rng.randint(100, 9999)}: the {s} {rng.choice(SYMPTOMS)}. {p} {FIXES[i]}.",
            f"Incident on the {s} ({rng.choice(SYMPTOMS)}), traced to {CAUSES[i]}.",
        ])
        kind_type = "Insight"
    elif kind == "meeting":
        text = (f"In the {rng.choice(MEETINGS)} for project {proj}, we "
                f"{_fill(rng, rng.choice(OUTCOMES))}. {p} raised concerns about the {s}.")
        kind_type = "Context"
    elif kind == "habit":
        text = f"{p} {rng.choice(HABITS)}."
        kind_type = "Habit"
    elif kind == "insight":
        text = rng.choice([f"Realized that {rng.choice(INSIGHTS)}.", f"Learned that {rng.choice(INSIGHTS)}.",
                           f"Insight from the {proj} metrics: {rng.choice(INSIGHTS)}."])
        kind_type = "Insight"
    elif kind == "pattern":
        text = rng.choice([f"{p} usually {rng.choice(HABITS)}.",
                           f"The {s} typically {rng.choice(SYMPTOMS)} when traffic spikes.",
                           f"Deploys of the {s} often fail on the first try; a retry works."])
        kind_type = "Pattern"
    else:  # context
        filled = _fill(rng, rng.choice(CONTEXTS))
        text = f"{filled[0].upper()}{filled[1:]}."
        kind_type = "Context"
    tail = _fill(rng, rng.choice(TAIL))
    if tail and rng.random() < 0.5:
        text = f"{text} {tail}"
    if rng.random() < 0.15:  # some longer notes
        text = f"{text} Background: {_fill(rng, rng.choice(CONTEXTS))}; {rng.choice(INSIGHTS)}."
    return text, (kind_type if rng.random() < 0.4 else None)


KINDS = ["decision", "preference", "bug", "meeting", "habit", "insight", "pattern", "context"]
KIND_WEIGHTS = [18, 12, 20, 18, 6, 10, 6, 10]
KIND_TAGS = {"decision": "decision", "preference": "preference", "bug": "bug", "meeting": "meeting",
             "habit": "habit", "insight": "insight", "pattern": "pattern", "context": "context"}


def generate_memories(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """n synthetic memories: content, 1-4 hierarchical tags, importance, timestamp, metadata."""
    rng = random.Random(seed)
    end = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    year = 365 * 24 * 3600
    items = []
    for i in range(n):
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        content, memory_type = _sentence(rng, kind)
        pool = [f"project:{rng.choice(PROJECTS)}", f"slack:channel:{rng.choice(CHANNELS)}",
                f"person:{rng.choice(PEOPLE)}", KIND_TAGS[kind], *rng.sample(TOPIC_TAGS, 3)]
        tags = rng.sample(pool, rng.randint(1, 4))
        when = end - dt.timedelta(seconds=rng.randrange(year))
        metadata: dict[str, Any] = {"source": rng.choice(["slack", "github", "cli", "mcp", "email"]),
                                    "author": rng.choice(PEOPLE)}
        if rng.random() < 0.3:
            metadata["ticket"] = f"{rng.choice(PROJECTS).upper()}-{rng.randint(1, 9999)}"
        if rng.random() < 0.2:
            metadata["links"] = [f"https://example.com/{rng.randint(1, 10**6)}"]
        item: dict[str, Any] = {
            "content": content,
            "tags": tags,
            "importance": round(min(1.0, max(0.05, rng.betavariate(2, 3) * 1.2)), 2),
            "timestamp": when.isoformat().replace("+00:00", "Z"),
            "metadata": metadata,
        }
        if memory_type:
            item["type"] = memory_type
        items.append(item)
    return items


def unit_vectors(n: int, seed: int = SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIMS), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


# --------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------


def db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def run_baseline(items: list[dict[str, Any]]) -> float:
    """Seconds to insert items into a plain one-table file in one transaction."""
    with tempfile.TemporaryDirectory(prefix="localmem-bench-") as tmp:
        path = Path(tmp) / "baseline.db"
        conn = apsw.Connection(str(path))
        # Same file settings as localmem's connect(), so the ratio isolates localmem's own work.
        conn.execute("PRAGMA page_size = 8192")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("CREATE TABLE memories (pk INTEGER PRIMARY KEY, content TEXT NOT NULL, "
                     "tags TEXT NOT NULL, importance REAL, timestamp TEXT, metadata TEXT)")
        start = time.perf_counter()
        with conn:
            conn.executemany(
                "INSERT INTO memories (content, tags, importance, timestamp, metadata) VALUES (?, ?, ?, ?, ?)",
                [(it["content"], json.dumps(it["tags"]), it["importance"], it["timestamp"],
                  json.dumps(it["metadata"])) for it in items])
        elapsed = time.perf_counter() - start
        conn.close()
    return elapsed


def size_breakdown(path: Path) -> list[tuple[str, int]] | None:
    """Bytes per part of a localmem file, from the dbstat virtual table (None if unavailable)."""
    groups = [
        ("float32 copy (`memory_embeddings`)", lambda t: t.startswith("memory_embeddings")),
        ("code index (`vector_codes`)", lambda t: t.startswith("vector_code")),
        ("FTS5 (`memories_fts_*`)", lambda t: t.startswith("memories_fts")),
        ("tag + prefix tables", lambda t: t.startswith(("memory_tags", "memory_tag_prefixes"))),
        ("`memories` + its indexes", lambda t: t.startswith(("memories", "sqlite_autoindex_memories_"))),
    ]
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rows = list(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
        finally:
            conn.close()
    except apsw.Error:
        return None
    totals: dict[str, int] = {}
    for name, size in rows:
        label = next((g for g, match in groups if match(name)), "other (schema, meta, edges, ...)")
        totals[label] = totals.get(label, 0) + size
    return sorted(totals.items(), key=lambda kv: -kv[1])


def with_store(embedder: str, body: Callable[[MemoryStore, Path], Any]) -> Any:
    """Run body(store, path) on a fresh store in a temp dir that is deleted afterwards."""
    with tempfile.TemporaryDirectory(prefix="localmem-bench-") as tmp:
        path = Path(tmp) / "bench.db"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = MemoryStore(path, embedder=embedder)
        try:
            return body(store, path)
        finally:
            store.close()


def store_many_batched(store: MemoryStore, items: list[dict[str, Any]], batch: int) -> None:
    for start in range(0, len(items), batch):
        store.store_many(items[start:start + batch])


def case_store_many_vectors(items, vectors, batch) -> dict[str, Any]:
    prepared = [{**it, "embedding": vectors[i]} for i, it in enumerate(items)]

    def body(store: MemoryStore, path: Path) -> dict[str, Any]:
        start = time.perf_counter()
        store_many_batched(store, prepared, batch)
        elapsed = time.perf_counter() - start
        count = store.conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0]
        assert count == len(items), (count, len(items))
        store.close()  # checkpoints the WAL into the main file
        return {"seconds": elapsed, "bytes": db_size(path), "breakdown": size_breakdown(path)}

    return with_store("hash", body)  # the hash embedder is never called: every item has a vector


def existing_store(count: int, rebuild: bool = False) -> Path:
    """A cached store of ``count`` generated memories with vectors (built once, in calls of 5,000)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"ingest-base-{count}-v{LATEST_VERSION}.db"
    if path.exists() and not rebuild:
        return path
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    building = path.with_suffix(".building")
    building.unlink(missing_ok=True)
    items = generate_memories(count, seed=SEED + 1)  # another seed: the cases' memories are new to it
    vectors = unit_vectors(count, seed=SEED + 1)
    for item, vector in zip(items, vectors):
        item["embedding"] = vector
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = MemoryStore(building, embedder="hash")
    try:
        store_many_batched(store, items, 5000)
    finally:
        store.close()  # checkpoints the WAL into the file, so one file is a complete copy
    building.rename(path)
    return path


@contextlib.contextmanager
def copy_of_store(base: Path) -> Iterator[MemoryStore]:
    """The cached ``base`` store copied to a temporary file (the copy is not timed), open."""
    with tempfile.TemporaryDirectory(prefix="localmem-bench-") as tmp:
        path = Path(tmp) / "bench.db"
        shutil.copyfile(base, path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as when the base was built
            store = MemoryStore(path, embedder="hash")
        try:
            yield store
        finally:
            store.close()


def case_store_many_existing(items, vectors, batch, base: Path) -> dict[str, Any]:
    """Case 1 into a fresh copy of the cached ``base`` store (copying is not timed)."""
    prepared = [{**it, "embedding": vectors[i]} for i, it in enumerate(items)]
    with copy_of_store(base) as store:
        before = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        start = time.perf_counter()
        store_many_batched(store, prepared, batch)
        elapsed = time.perf_counter() - start
        after = store.conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0]
        assert after == before + len(items), (before, after, len(items))
    return {"seconds": elapsed, "existing": before}


def case_store_single(items, vectors) -> dict[str, Any]:
    def body(store: MemoryStore, path: Path) -> dict[str, Any]:
        start = time.perf_counter()
        for i, it in enumerate(items):
            store.store(it["content"], **{k: v for k, v in it.items() if k != "content"},
                        embedding=vectors[i])
        return {"seconds": time.perf_counter() - start}

    return with_store("hash", body)


def case_store_many_hash(items, batch) -> dict[str, Any]:
    def body(store: MemoryStore, path: Path) -> dict[str, Any]:
        start = time.perf_counter()
        store_many_batched(store, items, batch)
        elapsed = time.perf_counter() - start
        count = store.conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0]
        assert count == len(items), (count, len(items))
        return {"seconds": elapsed}

    return with_store("hash", body)


def case_model(items, batch, warmup_texts) -> dict[str, Any]:
    texts = [it["content"] for it in items]

    def body(store: MemoryStore, path: Path) -> dict[str, Any]:
        embedder = store.embedder
        t0 = time.perf_counter()
        embedder.embed(warmup_texts)  # import + load + full-size batches on other texts, not timed
        load = time.perf_counter() - t0
        # embed, store_many, embed: the two pure-embed runs bracket store_many against drift.
        start = time.perf_counter()
        embedder.embed(texts)
        embed_before = time.perf_counter() - start
        start = time.perf_counter()
        store_many_batched(store, items, batch)
        store_seconds = time.perf_counter() - start
        start = time.perf_counter()
        embedder.embed(texts)
        embed_after = time.perf_counter() - start
        count = store.conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0]
        assert count == len(items), (count, len(items), store.embedder_error)
        return {"seconds": store_seconds, "embed_runs": [embed_before, embed_after], "load_seconds": load,
                "embedder": f"{embedder.name} ({type(embedder).__name__})"}

    return with_store("auto", body)


def model_available() -> str | None:
    """None when the real model can run, else the reason it cannot."""
    import importlib.util

    for module in ("sentence_transformers", "torch"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


def profile_store_many(items, vectors, batch, top: int = 25, base: Path | None = None) -> str:
    """cProfile of case 1 (into a copy of ``base`` when given: case 5)."""
    prepared = [{**it, "embedding": vectors[i]} for i, it in enumerate(items)]
    profiler = cProfile.Profile()

    def body(store: MemoryStore, path: Path) -> None:
        profiler.enable()
        store_many_batched(store, prepared, batch)
        profiler.disable()

    if base is None:
        with_store("hash", body)
    else:
        with copy_of_store(base) as store:
            body(store, Path(store.path))
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def nproc() -> str:
    exe = shutil.which("nproc")
    if exe:
        try:
            return subprocess.run([exe], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            pass
    return str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())


def fmt_rate(rate: float) -> str:
    return f"{rate:,.0f}"


def write_results(section: str) -> None:
    write_section("ingest", section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="memories for store_many cases (default 5000)")
    parser.add_argument("--single-n", type=int, default=None, help="memories for store() one at a time (default n/5)")
    parser.add_argument("--model-n", type=int, default=500, help="memories for the real-model case (default 500)")
    parser.add_argument("--batch", type=int, default=500, help="items per store_many call (default 500)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per case, each in a fresh file; the fastest is reported (default 3)")
    parser.add_argument("--no-model", action="store_true", help="skip the sentence-transformers case")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile store_many with precomputed vectors and print the hot spots")
    parser.add_argument("--existing", type=int, default=0, metavar="N",
                        help="also time case 1 into a store already holding N memories (case 5; "
                             "the store is built once and cached in benchmarks/.cache/)")
    parser.add_argument("--rebuild-existing", action="store_true", help="rebuild the cached --existing store")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/results/history.md alone")
    args = parser.parse_args(argv)
    n = args.n
    single_n = args.single_n if args.single_n is not None else max(1, n // 5)
    model_n = args.model_n
    repeat = max(1, args.repeat)
    model_repeat = repeat
    command = (f"cd {shlex.quote(os.getcwd())} && " + shlex.join([sys.executable, *sys.argv])
               if argv is None else shlex.join(["ingest.py", *argv]))

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_start = time.perf_counter()
    items = generate_memories(max(n, single_n, model_n))
    vectors = unit_vectors(len(items))
    baseline_runs: list[float] = []  # seconds for n rows, measured before every case run
    runs: dict[str, list[float]] = {"1": [], "2": [], "3": [], "4": [], "4b": [], "5": []}
    base_store: Path | None = None
    if args.existing > 0:
        say(f"preparing the store of {args.existing:,} memories for case 5 (cached) ...")
        base_store = existing_store(args.existing, rebuild=args.rebuild_existing)

    def baseline() -> None:
        baseline_runs.append(run_baseline(items[:n]))

    baseline()  # warm-up run (page cache, imports), not kept
    baseline_runs.clear()
    case1: dict[str, Any] = {}
    for rep in range(repeat):  # cases interleaved, so a noisy spell hits one run of each, not all runs of one
        baseline()
        case1 = case_store_many_vectors(items[:n], vectors, args.batch)
        runs["1"].append(case1["seconds"])
        baseline()
        runs["2"].append(case_store_single(items[:single_n], vectors)["seconds"])
        baseline()
        runs["3"].append(case_store_many_hash(items[:n], args.batch)["seconds"])
        done = [("1", n), ("2", single_n), ("3", n)]
        if base_store is not None:
            baseline()
            runs["5"].append(case_store_many_existing(items[:n], vectors, args.batch, base_store)["seconds"])
            done.append(("5", n))
        say(f"run {rep + 1}/{repeat}: baseline {fmt_rate(n / baseline_runs[-1])} rows/s, "
            + ", ".join(f"case {k} {fmt_rate(m / runs[k][-1])}/s" for k, m in done))

    notes: list[str] = []
    skip = "--no-model given" if args.no_model else model_available()
    model_info = ""
    model_extra: dict[str, Any] = {}
    if skip is None:
        warmup = [it["content"] for it in generate_memories(128, seed=SEED + 1)]
        for rep in range(model_repeat):
            baseline()
            say(f"case 4 run {rep + 1}/{model_repeat}: loading and warming the model (not timed)...")
            r = case_model(items[:model_n], args.batch, warmup)
            runs["4"].append(r["seconds"])
            runs["4b"].extend(r["embed_runs"])
            model_extra.setdefault("load", r["load_seconds"])  # first load includes the import
            model_extra["embedder"] = r["embedder"]
            say(f"case 4: store_many {fmt_rate(model_n / r['seconds'])}/s, embed alone "
                + " / ".join(f"{fmt_rate(model_n / x)}/s" for x in r["embed_runs"]))
    else:
        notes.append(f"Case 4 (real model) skipped: {skip}.")
    baseline()

    base_seconds = min(baseline_runs)
    base = n / base_seconds
    total = time.perf_counter() - t_start

    def all_runs(seconds: list[float], digits: int = 2) -> str:
        return " / ".join(f"{x:.{digits}f}" for x in seconds)

    rows: list[dict[str, Any]] = [
        {"case": f"1. `store_many`, precomputed vectors, calls of {args.batch}", "n": n, "key": "1"},
        {"case": "2. `store()` one at a time, precomputed vectors", "n": single_n, "key": "2"},
        {"case": f"3. `store_many`, `embedder=\"hash\"`, calls of {args.batch}", "n": n, "key": "3"},
    ]
    if runs["5"]:
        rows.append({"case": f"5. as case 1, into a store already holding {args.existing:,} memories",
                     "n": n, "key": "5"})
    if runs["4"]:
        rows += [
            {"case": f"4. `store_many`, `embedder=\"auto\"` (MiniLM), calls of {args.batch}", "n": model_n,
             "key": "4"},
            {"case": "4b. pure `embedder.embed` on the same texts", "n": model_n, "key": "4b", "no_ratio": True},
        ]
    header = ["case", "N", "best s", "memories/s", "÷ baseline", "baseline is ×", "all runs (s)"]
    table = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 2) + ["---"]) + "|"]
    table.append(f"| baseline: plain apsw `executemany`, one table, one transaction | {n} | "
                 f"{base_seconds:.3f} | {fmt_rate(base)} | 1 | 1 | {all_runs(baseline_runs, 3)} |")
    for row in rows:
        best = min(runs[row["key"]])
        rate = row["n"] / best
        ratio = "" if row.get("no_ratio") else f"{rate / base:.4f}"
        slower = "" if row.get("no_ratio") else f"{base / rate:.0f}"
        table.append(f"| {row['case']} | {row['n']} | {best:.2f} | {fmt_rate(rate)} | {ratio} | {slower} | "
                     f"{all_runs(runs[row['key']])} |")

    if runs["4"]:
        store_best, embed_best = min(runs["4"]), min(runs["4b"])
        per_memory_rest = min(runs["1"]) / n  # validation + SQLite + indexes, from case 1
        model_info = (
            f"Case 4 embedder: {model_extra['embedder']}; `import sentence_transformers` + model load + a "
            f"128-text warm-up took {model_extra['load']:.1f} s in the first run (not timed). Each run: "
            "fresh file, warm-up, pure `embed` of the N texts, `store_many` of the same N memories, pure "
            f"`embed` again. Best `store_many` minus best pure embedding: {store_best - embed_best:+.2f} s "
            f"({(store_best - embed_best) / store_best:+.0%} of `store_many`; noisy, and `store_many` embeds in "
            "chunks of its `batch_size=256` while the pure runs embed all N texts in one call). The "
            f"non-embedding cost measured in case 1 ({per_memory_rest * 1e3:.2f} ms per memory) is "
            f"{per_memory_rest * model_n / store_best:.1%} of case 4's time: with the real model, ingest is "
            "bound by the embedder, not by SQLite.")

    size_per_1k = case1["bytes"] / (n / 1000)
    breakdown = case1["breakdown"]
    env = (f"Python {platform.python_version()}, apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}), "
           f"sqlite-vec {version('sqlite-vec')}, numpy {np.__version__}")
    if skip is None:
        env += f", sentence-transformers {version('sentence-transformers')}, torch {version('torch')}"
    lines = [
        "## Ingest throughput",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}  ",
        f"Environment: {env}; `nproc` = {nproc()}; {platform.platform()}  ",
        f"Total run time: {total:.0f} s",
        "",
        *table,
        "",
        f"Each case ran {repeat}×, each run in a fresh temporary file, with "
        "the cases interleaved; the table shows the fastest run. The baseline ran before every case run "
        f"({len(baseline_runs)} runs; fastest shown): same pragmas as localmem (8 KiB pages, WAL, "
        "synchronous=NORMAL), columns content, JSON tags, importance, timestamp, JSON metadata, one "
        "transaction, no FTS, vectors, tag tables or secondary indexes. `÷ baseline` = localmem rate / "
        "baseline rate (higher is better); `baseline is ×` is its inverse.",
        "",
        f"File size after case 1 (WAL checkpointed on close): {size_per_1k / 1e6:.2f} MB per 1k memories "
        f"({size_per_1k * n / 1000 / 1e6:.1f} MB total for {n}); the raw float32 vectors alone are "
        f"{DIMS * 4 * 1000 / 1e6:.2f} MB per 1k, stored once as float32, plus a 3-bit code "
        f"({3 * DIMS // 8} bytes) per memory in the code index."
        + ("" if not breakdown else " Per 1k memories: " + ", ".join(
            f"{label} {size / (n / 1000) / 1e6:.2f} MB" for label, size in breakdown) + "."),
        "",
        "Memories: synthetic decisions, preferences, bugs, meetings, habits, insights, patterns and context notes "
        "built from word lists (seeded), 1–4 hierarchical tags (`project:alpha`, `slack:channel:general`, "
        "`source:github:pr`, ...), importance, timestamps spread over a year, small metadata; about 40% pass an "
        "explicit `type`, the rest go through the classifier. Precomputed vectors: random normal, normalised, "
        "float32 numpy rows passed as `embedding=` (generation not timed). The store is opened before the "
        "clock starts; cases 1–2 open it with `embedder=\"hash\"`, which is never called since every item "
        "has a vector.",
    ]
    if model_info:
        lines += ["", model_info]
    for note in notes:
        lines += ["", note]
    section = "\n".join(lines)
    print(section)

    if args.profile:
        prof = profile_store_many(items[:n], vectors, args.batch)
        print("\n## cProfile of case 1 (store_many, precomputed vectors)\n")
        print(prof)
        if base_store is not None:
            prof = profile_store_many(items[:n], vectors, args.batch, base=base_store)
            print(f"\n## cProfile of case 5 (case 1 into a store of {args.existing:,} memories)\n")
            print(prof)
    if not args.no_write:
        write_results(section)
        say("wrote docs/results/history.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
