"""Recall latency benchmark for localmem.

Builds (once, cached under ``benchmarks/.cache/``) a store of ``--n`` synthetic
memories with the hash embedder: the ingest benchmark's generator (hierarchical
tags, timestamps over a year, metadata), plus ``entities`` metadata and
``entity:people:<slug>`` tags on memories that name a person, ``--edges``
``associate`` edges over the 11 authorable relation types, and a few percent
of memories replaced through ``supersede``. Then times ``store.recall`` on
``--queries`` varied queries in six modes, interleaved per query (the mode order
rotates from one query to the next) so a noisy spell on the shared machine hits
every mode alike:

* ``plain``      -- the query alone;
* ``tags``       -- plus a tag scope (one or two hierarchical tags, any/all);
* ``window``     -- plus a time window (``time_query`` or explicit start/end);
* ``relations``  -- plus ``expand_relations=True``;
* ``entities``   -- plus ``expand_entities=True``;
* ``both``       -- plus both expansions.

The store is opened with ``LOCALMEM_TRACK_ACCESS=0`` so recalls write nothing
(checked with ``total_changes``), and with a clock pinned to the end of the
data's year. Each mode reports p50 / p95 / mean and its p50 divided by plain
recall's p50 from the same run. A separate cProfile pass over the plain queries
lists the top functions by cumulative (and by own) time. The table is printed
and written into ``docs/results/history.md`` between the
``<!-- recall-latency:start -->`` / ``<!-- recall-latency:end -->`` markers.

    python benchmarks/speed/recall_latency.py [--n 10000] [--edges 15000] [--queries 240] [--limit 10]
                                        [--rebuild] [--no-write]
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import hashlib
import json
import os
import platform
import pstats
import random
import re
import shlex
import statistics
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import apsw
import numpy as np

# The ingest benchmark's generator and helpers (importing it has no side effects
# beyond os.environ.setdefault of three Hugging Face variables).
from benchmarks.speed.ingest import (
    CAUSES,
    CHANNELS,
    HABITS,
    INSIGHTS,
    MEETINGS,
    PEOPLE,
    PREFS,
    PROJECTS,
    SERVICES,
    SYMPTOMS,
    TECH,
    TOPIC_TAGS,
    generate_memories,
    nproc,
    version,
)
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402

from localmem.config import Config
from localmem.storage.migrations import LATEST_VERSION
from localmem.relations import AUTHORABLE_TYPES, RELATION_TYPES
from localmem.store import MemoryStore

CACHE = ROOT / "benchmarks" / ".cache"
SEED = 20240601
BUILD_VERSION = 1  # bump when the build below changes in a way the plan hash cannot see
NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.timezone.utc)  # just after the newest generated memory
MODES = ("plain", "tags", "window", "relations", "entities", "both")
SURNAMES = ["Moreau", "Okafor", "Lindqvist", "Petrov", "Walsh", "Haddad", "Oliveira", "Sato", "Costa",
            "Kim", "Mensah", "Fischer"]
FULL_NAMES = {p: f"{p.title()} {s}" for p, s in zip(PEOPLE, SURNAMES)}
_PERSON_WORD = re.compile(r"\b(" + "|".join(p.title() for p in PEOPLE) + r")\b")


def pinned_clock() -> dt.datetime:
    return NOW


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --------------------------------------------------------------------------
# The store: a deterministic plan, built once and cached
# --------------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _edge_properties(rng: random.Random, relation: str) -> dict[str, Any]:
    values = {
        "context": lambda: rng.choice(["code review", "incident follow-up", "planning", "retro"]),
        "reason": lambda: rng.choice(["same root cause", "newer measurements", "team decision",
                                      "customer feedback", "follow-up work"]),
        "pattern_type": lambda: rng.choice(["habit", "workflow", "failure mode"]),
        "confidence": lambda: round(rng.uniform(0.5, 1.0), 2),
        "resolution": lambda: rng.choice(["newer wins", "both valid in context", "open"]),
        "observations": lambda: rng.randint(1, 12),
        "timestamp": lambda: (NOW - dt.timedelta(days=rng.randrange(365))).isoformat().replace("+00:00", "Z"),
        "transformation": lambda: rng.choice(["summarised", "generalised", "split out"]),
        "role": lambda: rng.choice(["component", "milestone", "sub-task"]),
    }
    props = RELATION_TYPES[relation].properties
    if not props or rng.random() < 0.6:
        return {}
    chosen = rng.sample(props, rng.randint(1, len(props)))
    return {name: values[name]() for name in chosen}


def build_plan(n: int, n_edges: int, superseded_share: float, entity_share: float,
               seed: int = SEED) -> dict[str, Any]:
    """Everything the build writes, decided up front with fixed seeds (so it can be hashed)."""
    rng = random.Random(seed + 7)
    n_superseded = round(n * superseded_share)
    base = generate_memories(n - n_superseded, seed=seed)
    for item in base:
        item["id"] = _uuid(rng)
        named = list(dict.fromkeys(_PERSON_WORD.findall(item["content"])))
        if named and rng.random() < entity_share:
            people = [FULL_NAMES[name.lower()] for name in named[:2]]
            item["metadata"]["entities"] = {"people": people}
            item["tags"] = item["tags"] + [f"entity:people:{slug(p)}" for p in people]

    # Supersessions: a revised version of a few percent of the memories.
    supersede = []
    for index in rng.sample(range(len(base)), n_superseded):
        old = base[index]
        tech = next((t for t in TECH if re.search(rf"\b{re.escape(t)}\b", old["content"])), None)
        if tech is not None:
            content = re.sub(rf"\b{re.escape(tech)}\b", rng.choice([t for t in TECH if t != tech]),
                             old["content"], count=1)
        else:
            content = f"Revised: {old['content']}"
        when = dt.datetime.fromisoformat(old["timestamp"].replace("Z", "+00:00")) + dt.timedelta(
            days=rng.uniform(1, 60))
        when = min(when, NOW - dt.timedelta(hours=1))
        supersede.append({
            "old": old["id"],
            "relation": "INVALIDATED_BY" if rng.random() < 0.6 else "EVOLVED_INTO",
            "reason": rng.choice([None, "reversed after the load test", "outdated", "team changed its mind"]),
            "fields": {"id": _uuid(rng), "tags": old["tags"], "importance": old["importance"],
                       "timestamp": when.isoformat().replace("+00:00", "Z"),
                       "metadata": {**old["metadata"], "revision": 2}},
            "content": content,
        })

    # Edges: mostly within a cluster (same first tag), some random, some to hub memories.
    ids = [item["id"] for item in base]
    clusters: dict[str, list[str]] = {}
    for item in base:
        clusters.setdefault(item["tags"][0].split(":")[0] + ":" + item["tags"][0].split(":")[-1], []).append(item["id"])
    hubs = rng.sample(ids, max(1, len(ids) // 50))
    cluster_of = {item["id"]: clusters[item["tags"][0].split(":")[0] + ":" + item["tags"][0].split(":")[-1]]
                  for item in base}
    edges: list[dict[str, Any]] = []
    keys: set[tuple[str, str, str]] = set()
    while len(edges) < n_edges:
        src = rng.choice(ids)
        roll = rng.random()
        if roll < 0.6:
            dst = rng.choice(cluster_of[src])
        elif roll < 0.85:
            dst = rng.choice(ids)
        else:
            dst = rng.choice(hubs)
        relation = rng.choice(AUTHORABLE_TYPES)
        if dst == src or (src, relation, dst) in keys:
            continue
        keys.add((src, relation, dst))
        edges.append({"src": src, "dst": dst, "type": relation, "strength": round(rng.uniform(0.3, 1.0), 2),
                      "properties": _edge_properties(rng, relation)})
    return {"items": base, "supersede": supersede, "edges": edges}


# Library code that cannot change what the build writes (the read path, front ends, tools).
NOT_SHAPING_DIRS = frozenset({"recall", "http", "mcp_server", "__pycache__"})
NOT_SHAPING_FILES = frozenset({"cli.py", "demo.py", "doctor.py", "importer.py", "export.py", "__main__.py",
                               "pytest_plugin.py", "progress.py"})


def source_fingerprint() -> str:
    """Hash of the library code that shapes the stored file (read path and front ends excluded)."""
    digest = hashlib.sha256()
    package = ROOT / "localmem"
    files = sorted(p for p in package.rglob("*") if p.suffix in (".py", ".sql")
                   and not NOT_SHAPING_DIRS & set(p.relative_to(package).parts)
                   and p.name not in NOT_SHAPING_FILES)
    for path in files:
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(plan: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps({"build": BUILD_VERSION, "schema": LATEST_VERSION, "now": NOW.isoformat()}).encode())
    digest.update(json.dumps(plan, sort_keys=True).encode())
    digest.update(source_fingerprint().encode())
    return digest.hexdigest()[:16]


def open_store(path: Path, *, track_access: bool) -> MemoryStore:
    env = {} if track_access else {"LOCALMEM_TRACK_ACCESS": "0"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MemoryStore(path, embedder="hash", config=Config.from_env(env), clock=pinned_clock)


def build_store(path: Path, plan: dict[str, Any], say) -> dict[str, Any]:
    """Write the plan into a fresh file at path (via a temporary name); returns build timings."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    store = open_store(tmp, track_access=True)
    stats: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        items = plan["items"]
        for start in range(0, len(items), 1000):
            store.store_many(items[start:start + 1000])
        stats["store_many_s"] = time.perf_counter() - t0
        say(f"build: store_many of {len(items)} memories in {stats['store_many_s']:.1f} s")

        t0 = time.perf_counter()
        for s in plan["supersede"]:
            store.supersede(s["old"], s["content"], relation=s["relation"], reason=s["reason"], **s["fields"])
        stats["supersede_s"] = time.perf_counter() - t0
        say(f"build: {len(plan['supersede'])} supersede calls in {stats['supersede_s']:.1f} s")

        t0 = time.perf_counter()
        for e in plan["edges"]:
            store.associate(e["src"], e["dst"], e["type"], e["strength"], **e["properties"])
        stats["associate_s"] = time.perf_counter() - t0
        say(f"build: {len(plan['edges'])} associate calls in {stats['associate_s']:.1f} s")

        health = store.health()
        stats["memories"] = health["memory_count"]
        stats["edges"] = health["edge_count"]
        stats["vectors"] = health["vector_count"]
        stats["tag_rows"] = health["tag_count"]
        stats["healthy"] = health["status"]
        stats["entity_memories"] = store.conn.execute(
            "SELECT count(DISTINCT pk) FROM memory_tags WHERE tag LIKE 'entity:people:%'").fetchone()[0]
        stats["superseded"] = store.conn.execute(
            "SELECT count(*) FROM memories WHERE t_invalid IS NOT NULL").fetchone()[0]
        stats["built"] = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    finally:
        store.close()  # the last connection checkpoints and removes the WAL
    tmp.replace(path)
    for extra in (Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        extra.unlink(missing_ok=True)
    return stats


def cached_store(plan: dict[str, Any], rebuild: bool, say) -> tuple[Path, dict[str, Any], bool]:
    CACHE.mkdir(parents=True, exist_ok=True)
    key = cache_key(plan)
    path = CACHE / f"recall-latency-{key}.db"
    meta_path = CACHE / f"recall-latency-{key}.json"
    for stale in CACHE.glob("recall-latency-*"):
        if key not in stale.name:
            stale.unlink(missing_ok=True)
    if not rebuild and path.exists() and meta_path.exists():
        return path, json.loads(meta_path.read_text("utf-8")), True
    path.unlink(missing_ok=True)
    meta_path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    stats = build_store(path, plan, say)
    stats["build_s"] = time.perf_counter() - t0
    meta_path.write_text(json.dumps(stats, indent=1), "utf-8")
    return path, stats, False


# --------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------


def make_query(rng: random.Random) -> str:
    p, s, proj = rng.choice(PEOPLE).title(), rng.choice(SERVICES), rng.choice(PROJECTS).title()
    a, b = rng.sample(TECH, 2)
    return rng.choice([
        lambda: f"why did we pick {a} for the {s}",
        lambda: f"{a} vs {b}",
        lambda: f"decisions about {a} in project {proj}",
        lambda: f"the {s} {rng.choice(SYMPTOMS)}",
        lambda: f"root cause: {rng.choice(CAUSES)}",
        lambda: f"what does {p} prefer",
        lambda: f"{p} {rng.choice(PREFS)}",
        lambda: f"{rng.choice(MEETINGS)} for project {proj}",
        lambda: f"who owns the {s}",
        lambda: f"{p} {rng.choice(HABITS)}",
        lambda: rng.choice(INSIGHTS),
        lambda: f"latest on the {s} incident",
        lambda: a,
        lambda: p,
        lambda: f"{FULL_NAMES[p.lower()]} {s}",
        lambda: f"is the {s} still on {a}",
    ])()


def make_tags(rng: random.Random) -> dict[str, Any]:
    def one() -> str:
        return rng.choice([
            lambda: f"project:{rng.choice(PROJECTS)}",
            lambda: "slack:channel",
            lambda: f"slack:channel:{rng.choice(CHANNELS)}",
            lambda: f"person:{rng.choice(PEOPLE)}",
            lambda: rng.choice(TOPIC_TAGS),
            lambda: rng.choice(["source:github", "topic", "env:prod", "team"]),
            lambda: rng.choice(["decision", "bug", "meeting", "preference"]),
            lambda: f"entity:people:{slug(FULL_NAMES[rng.choice(PEOPLE)])}",
        ])()

    roll = rng.random()
    if roll < 0.5:
        return {"tags": [one()]}
    tags = list(dict.fromkeys([one(), one()]))
    return {"tags": tags, "tag_mode": "all" if roll > 0.8 else "any"}


def make_window(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.4:
        return {"time_query": rng.choice(["last 30 days", "last 90 days", "last month", "this year",
                                          "last week", "last 180 days"])}
    start = NOW - dt.timedelta(days=rng.uniform(7, 365))
    end = min(NOW, start + dt.timedelta(days=rng.uniform(7, 120)))
    return {"start": start.isoformat().replace("+00:00", "Z"), "end": end.isoformat().replace("+00:00", "Z")}


def make_workload(count: int, seed: int = SEED + 99) -> list[dict[str, dict[str, Any]]]:
    rng = random.Random(seed)
    workload = []
    for _ in range(count):
        query = make_query(rng)
        workload.append({
            "query": query,
            "plain": {},
            "tags": make_tags(rng),
            "window": make_window(rng),
            "relations": {"expand_relations": True},
            "entities": {"expand_entities": True},
            "both": {"expand_relations": True, "expand_entities": True},
        })
    return workload


# --------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------


def check_response(mode: str, kwargs: dict[str, Any], response: dict[str, Any], tally: dict[str, float]) -> None:
    """Tally what the mode actually did, and count scope violations (should stay 0)."""
    results = response["results"]
    tally["results"] += len(results)
    tally["nonempty"] += bool(results)
    tally["relation_expanded"] += response.get("expansion", {}).get("expanded_count", 0)
    tally["entity_expanded"] += response.get("entity_expansion", {}).get("expanded_count", 0)
    if mode == "tags":
        wanted = [t.lower() for t in kwargs["tags"]]
        for r in results:
            if r.get("outside_tag_scope") or r.get("match_type") in ("relation", "entity_expansion"):
                continue
            prefixes = set(r["memory"]["tag_prefixes"])
            hits = sum(1 for t in wanted if t in prefixes)
            if hits == 0 or (kwargs.get("tag_mode") == "all" and hits < len(wanted)):
                tally["violations"] += 1
    if mode == "window":
        window = response.get("time_window") or {}
        for r in results:
            ts = r["memory"]["timestamp"]
            if (window.get("start") and ts < window["start"]) or (window.get("end") and ts > window["end"]):
                tally["violations"] += 1


def measure(store: MemoryStore, workload: list[dict[str, Any]], limit: int, warmup: int
            ) -> tuple[dict[str, list[float]], dict[str, dict[str, float]]]:
    for spec in workload[:warmup]:  # statement cache, page cache, lazy imports; not kept
        for mode in MODES:
            store.recall(spec["query"], limit=limit, **spec[mode])
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    tallies = {mode: {k: 0.0 for k in ("results", "nonempty", "relation_expanded", "entity_expanded",
                                       "violations")} for mode in MODES}
    for i, spec in enumerate(workload[warmup:]):
        order = MODES[i % len(MODES):] + MODES[:i % len(MODES)]  # rotate the order per query
        for mode in order:
            kwargs = spec[mode]
            t0 = time.perf_counter()
            response = store.recall(spec["query"], limit=limit, **kwargs)
            times[mode].append(time.perf_counter() - t0)
            check_response(mode, kwargs, response, tallies[mode])
    return times, tallies


def profile_plain(store: MemoryStore, workload: list[dict[str, Any]], limit: int, top: int
                  ) -> tuple[list[list[str]], list[list[str]], float, float]:
    """cProfile the plain recalls; rows for the top functions by cumulative and by own time."""
    profiler = cProfile.Profile()
    for spec in workload:
        profiler.enable()
        store.recall(spec["query"], limit=limit)
        profiler.disable()
    stats = pstats.Stats(profiler)
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in entries.values())
    calls = len(workload)

    def name(func: tuple[str, int, str]) -> str:
        filename, line, fn = func
        if filename == "~":
            return f"`{fn}`"
        path = Path(filename)
        try:
            shown = str(path.resolve().relative_to(ROOT))
        except ValueError:
            shown = path.name
        return f"`{shown}:{line} {fn}`"

    def rows(key: int) -> list[list[str]]:
        ranked = sorted(entries.items(), key=lambda kv: -kv[1][key])[:top]
        out = []
        for func, (_, nc, tt, ct, _) in ranked:
            out.append([name(func), f"{nc / calls:.1f}", f"{tt / calls * 1e3:.3f}", f"{ct / calls * 1e3:.3f}",
                        f"{ct / total:.0%}", f"{tt / total:.0%}"])
        return out

    sql_own = sum(tt for func, (_, _, tt, _, _) in entries.items()
                  if func[2] in ("<method 'execute' of 'apsw.Connection' objects>",)
                  or (func[0].endswith("records.py") and func[2] == "rows_as_dicts"))
    return rows(3), rows(2), total / calls * 1e3, sql_own / calls * 1e3


class _FetchedCursor:
    """A cursor whose rows were all fetched already (what recall code uses of apsw.Cursor)."""

    def __init__(self, rows: list[tuple[Any, ...]], description: Any) -> None:
        self._rows, self._description = rows, description

    def __iter__(self):
        return iter(self._rows)

    def getdescription(self) -> Any:
        return self._description

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None


class _TimingConnection:
    """Stands in for store.conn: runs each statement to completion and times it by statement name."""

    def __init__(self, conn: apsw.Connection, names: dict[str, str], sink: dict[str, list[float]]) -> None:
        self._conn, self._names, self._sink = conn, names, sink

    def execute(self, statement: str, bindings: Any = None) -> _FetchedCursor:
        t0 = time.perf_counter()
        cursor = self._conn.execute(statement, bindings)
        try:
            description = cursor.getdescription()
        except apsw.ExecutionCompleteError:
            description = None
        rows = list(cursor)
        elapsed = time.perf_counter() - t0
        name = self._names.get(statement) or " ".join(statement.split())[:40]
        entry = self._sink.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += elapsed
        return _FetchedCursor(rows, description)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def sql_breakdown(store: MemoryStore, workload: list[dict[str, Any]], limit: int
                  ) -> dict[str, dict[str, Any]]:
    """Per-statement SQLite time of recalls in every mode (statements run to completion, rows fetched).

    Modes are interleaved per query as in the timing. Returns, per mode, ``statements``
    (name -> (runs per recall, ms per recall)), ``sql_ms`` and ``wall_ms`` per recall.
    """
    for spec in workload[:3]:  # make sure every statement text is loaded into store.sql
        for mode in MODES:
            store.recall(spec["query"], limit=limit, **spec[mode])
    names = {text: name for name, text in store.sql._cache.items()}
    sinks: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    walls = {mode: 0.0 for mode in MODES}
    real = store.conn
    try:
        for i, spec in enumerate(workload):
            for mode in MODES[i % len(MODES):] + MODES[:i % len(MODES)]:
                store.conn = _TimingConnection(real, names, sinks[mode])  # type: ignore[assignment]
                t0 = time.perf_counter()
                store.recall(spec["query"], limit=limit, **spec[mode])
                walls[mode] += time.perf_counter() - t0
    finally:
        store.conn = real
    calls = len(workload)
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        statements = {name: (count / calls, seconds / calls * 1e3) for name, (count, seconds) in sinks[mode].items()}
        out[mode] = {"statements": statements, "sql_ms": sum(ms for _, ms in statements.values()),
                     "wall_ms": walls[mode] / calls * 1e3}
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def write_results(section: str) -> None:
    write_section("recall-latency", section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store (default 10000)")
    parser.add_argument("--edges", type=int, default=15_000, help="associate edges (default 15000)")
    parser.add_argument("--superseded", type=float, default=0.03,
                        help="share of memories replaced through supersede (default 0.03)")
    parser.add_argument("--entity-share", type=float, default=0.5,
                        help="share of person-naming memories given entities metadata + tags (default 0.5)")
    parser.add_argument("--queries", type=int, default=240, help="queries, each run in every mode (default 240)")
    parser.add_argument("--limit", type=int, default=10, help="recall limit (default 10)")
    parser.add_argument("--warmup", type=int, default=5, help="queries run in every mode first, not timed")
    parser.add_argument("--sql-queries", type=int, default=120,
                        help="queries (each in every mode) for the per-statement SQL breakdown (default 120)")
    parser.add_argument("--top", type=int, default=10, help="rows in the cProfile tables (default 10)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached store")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile pass")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/results/history.md alone")
    args = parser.parse_args(argv)
    if args.queries < 1 or args.n < 100 or args.edges < 0:
        parser.error("need --queries >= 1, --n >= 100, --edges >= 0")
    command = (f"cd {shlex.quote(os.getcwd())} && " + shlex.join([sys.executable, *sys.argv])
               if argv is None else shlex.join(["recall_latency.py", *argv]))

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_start = time.perf_counter()
    plan = build_plan(args.n, args.edges, args.superseded, args.entity_share)
    path, build, reused = cached_store(plan, args.rebuild, say)
    say(f"store: {path} (" + ("reused cache" if reused else f"built in {build['build_s']:.1f} s") + ")")

    workload = make_workload(args.queries + args.warmup)
    warm, timed = workload[:args.warmup], workload[args.warmup:]
    store = open_store(path, track_access=False)
    try:
        assert not store.config.track_access
        health = store.health()
        if (health["memory_count"], health["edge_count"]) != (build["memories"], build["edges"]) \
                or health["status"] != "healthy":
            raise SystemExit(f"cached store does not match its build record; rerun with --rebuild: {health}")
        changes_before = store.conn.total_changes()
        t0 = time.perf_counter()
        times, tallies = measure(store, warm + timed, args.limit, len(warm))
        measure_s = time.perf_counter() - t0
        say(f"timed {len(timed)} queries x {len(MODES)} modes in {measure_s:.1f} s")
        profile = sql = None
        if not args.no_profile:
            sql = sql_breakdown(store, timed[:args.sql_queries], args.limit)
            profile = profile_plain(store, timed, args.limit, args.top)
        writes = store.conn.total_changes() - changes_before
    finally:
        store.close()
    if writes:
        raise SystemExit(f"recalls wrote {writes} rows despite LOCALMEM_TRACK_ACCESS=0")
    total = time.perf_counter() - t_start

    plain_p50 = statistics.median(times["plain"])
    paired = {mode: statistics.median(t / p for t, p in zip(times[mode], times["plain"])) for mode in MODES}
    labels = {
        "plain": "plain",
        "tags": "tag-scoped (`tags=`, 1–2 tags, any/all)",
        "window": "time-windowed (`time_query` or `start`/`end`)",
        "relations": "`expand_relations=True`",
        "entities": "`expand_entities=True`",
        "both": "both expansions",
    }
    nq = len(timed)
    table = [
        ("| mode | queries | p50 ms | p95 ms | mean ms | p50 ÷ plain p50 | median of per-query ratios "
        "| mean results | mean expanded (rel / ent) | empty answers |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        ms = [t * 1e3 for t in times[mode]]
        tally = tallies[mode]
        table.append(
            f"| {labels[mode]} | {nq} | {statistics.median(ms):.2f} | {pct(ms, 95):.2f} | {statistics.mean(ms):.2f} | "
            f"{statistics.median(times[mode]) / plain_p50:.2f} | {paired[mode]:.2f} | {tally['results'] / nq:.1f} | "
            f"{tally['relation_expanded'] / nq:.1f} / {tally['entity_expanded'] / nq:.1f} | "
            f"{nq - int(tally['nonempty'])} |")
    violations = {mode: int(t["violations"]) for mode, t in tallies.items() if t["violations"]}

    env = (f"Python {platform.python_version()}, apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}), "
           f"sqlite-vec {version('sqlite-vec')}, numpy {np.__version__}, localmem {version('localmem')} "
           f"(git {git_revision()})")
    size_mb = path.stat().st_size / 1e6
    build_line = (
        f"Store: {build['memories']:,} memories ({build['memories'] - build['superseded']:,} stored with "
        f"`store_many`, {build['superseded']:,} replaced through `supersede`, which stores their successors), "
        f"{build['edges']:,} edges ({args.edges:,} `associate` edges drawn uniformly from the "
        f"{len(AUTHORABLE_TYPES)} authorable types, 60% within a tag cluster, 25% random, 15% to 2% hub memories; "
        f"plus {build['superseded']:,} supersession edges), {build['entity_memories']:,} memories with "
        f"`metadata.entities.people` and `entity:people:<slug>` tags, {build['tag_rows']:,} tag rows, "
        f"`embedder=\"hash\"` (384 dims), {size_mb:.1f} MB. "
        + (f"Reused the cached file `benchmarks/.cache/{path.name}` (built {build['built']} in "
           f"{build['build_s']:.0f} s)" if reused else f"Built this run in {build['build_s']:.0f} s")
        + f": `store_many` {build['store_many_s']:.1f} s, {build['superseded']} `supersede` calls "
        f"{build['supersede_s']:.1f} s, {args.edges:,} `associate` calls (one transaction each) "
        f"{build['associate_s']:.1f} s.")
    lines = [
        "## Recall latency",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}  ",
        f"Environment: {env}; `nproc` = {nproc()}; {platform.platform()}  ",
        f"Total run time: {total:.0f} s (timed recalls {measure_s:.0f} s)",
        "",
        *table,
        "",
        f"Each of the {nq} queries ran once in every mode, the modes interleaved per query with the order "
        f"rotating from query to query, after {len(warm)} untimed warm-up queries in every mode. Times are "
        f"wall-clock around `store.recall(query, limit={args.limit}, ...)` in one process on one warm "
        "connection (file in the page cache). `p50 ÷ plain p50` compares medians from this run; the next column "
        "is the median over queries of (mode time ÷ plain time for the same query). `mean expanded` is the "
        "response's `expansion.expanded_count` / `entity_expansion.expanded_count`. The store was opened with "
        "`Config.from_env({\"LOCALMEM_TRACK_ACCESS\": \"0\"})` (no `last_accessed` writes; "
        "`total_changes()` unchanged over the run) and a clock pinned to 2025-06-01 12:00 UTC, just after "
        "the newest memory, so windows like `last 30 days` select data and superseded memories are expired. "
        + ("Scope checks: every tag-scoped result carried the requested tag prefix(es) and every windowed "
           "result fell inside its window." if not violations else
           f"Scope check violations: {violations}."),
        "",
        build_line,
        "",
        ("Queries: built from the generator's word lists (seeded): tool choices, `A vs B`, service symptoms, "
        "root causes, a person's preferences or habits, meetings per project, single words (a tool or a "
        "first name), full names with a service, insights. Tag scopes: `project:<p>`, `slack:channel` (a "
        "prefix) or `slack:channel:<c>`, `person:<p>`, topic/source/env/team tags and prefixes, kind tags, "
        "`entity:people:<slug>`; half single tags, the rest two tags (`tag_mode` any 60% / all 40%). "
        "Windows: 40% `time_query` (`last 30 days`, `last 90 days`, `last 180 days`, `last month`, "
        "`last week`, `this year`), 60% explicit `start`/`end` 7–120 days wide within the year."),
    ]
    if profile is not None:
        cumulative, own, per_call, sql_own = profile
        head = ("| function | calls / recall | own ms / recall | cumulative ms / recall | cumulative % | own % |\n"
                "|---|---:|---:|---:|---:|---:|")
        lines += [
            "",
            f"### Where plain recall spends its time (cProfile, {nq} plain recalls)",
            "",
            (f"Separate pass after the timing, profiler switched on only around `store.recall`; profiled time "
            f"{per_call:.2f} ms per recall (cProfile inflates Python-heavy code, so read shares, not absolute "
            "times). Top by cumulative time:"),
            "",
            head,
            *("| " + " | ".join(r) + " |" for r in cumulative),
            "",
            "Top by own time (time inside the function itself, excluding callees):",
            "",
            head,
            *("| " + " | ".join(r) + " |" for r in own),
            "",
            ("apsw cursors execute SQL inside `Connection.execute` (prepare + first step) and while Python "
            "iterates the cursor; iteration is not a profiled call, so stepping time lands mostly in the own "
            "time of `localmem/records.py rows_as_dicts` (which also builds one dict per row). Together these "
            "two are "
            f"{sql_own:.2f} ms per recall ({sql_own / per_call:.0%} of profiled time): an estimate of the "
            "SQLite share (vec0 kNN, FTS5, scope filter, vector distances)."),
        ]
    if sql is not None:
        nsql = min(args.sql_queries, nq)
        plain = sql["plain"]
        names = sorted({name for mode in MODES for name in sql[mode]["statements"]},
                       key=lambda name: -max(sql[mode]["statements"].get(name, (0, 0.0))[1] for mode in MODES))

        def cell(mode: str, name: str) -> str:
            runs, ms = sql[mode]["statements"].get(name, (0.0, 0.0))
            return "–" if not runs else f"{ms:.2f} ({runs:.2f})"

        lines += [
            "",
            f"### SQL vs Python per mode ({nsql} queries × {len(MODES)} modes, interleaved)",
            "",
            ("Another pass without the profiler, with `store.conn` wrapped by the benchmark so that each "
            "statement runs to completion (rows fetched eagerly) inside a timer. Cells: ms per recall "
            "(statement runs per recall). In plain recall, "
            f"{plain['sql_ms']:.2f} ms of {plain['wall_ms']:.2f} ms ({plain['sql_ms'] / plain['wall_ms']:.0%}) "
            "is SQLite; the rest is Python (row dicts, scoring, metadata matching, response)."),
            "",
            "| statement (`localmem/sql/*.sql`) | " + " | ".join(MODES) + " |",
            "|---|" + "---:|" * len(MODES),
            *(f"| `{name}` | " + " | ".join(cell(mode, name) for mode in MODES) + " |" for name in names),
            "| **SQL total** | " + " | ".join(f"{sql[m]['sql_ms']:.2f}" for m in MODES) + " |",
            "| **Python (wall − SQL)** | " + " | ".join(f"{sql[m]['wall_ms'] - sql[m]['sql_ms']:.2f}"
                                                      for m in MODES) + " |",
            "| **wall (this pass)** | " + " | ".join(f"{sql[m]['wall_ms']:.2f}" for m in MODES) + " |",
        ]
    section = "\n".join(lines)
    print(section)
    if not args.no_write:
        write_results(section)
        say("wrote docs/results/history.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
