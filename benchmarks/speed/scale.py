"""Speed at scale: recall latency per stage and end to end at 10k / 100k (/ 1M) memories.

Builds (and caches in benchmarks/.cache/) synthetic stores with realistic text,
hierarchical tags, a year of timestamps, relationship edges, some superseded
memories, and MiniLM-like vectors (mixtures of real MiniLM embeddings of the
same generator's texts, so the vectors have the model's anisotropy). Query
embeddings are passed in, so the model is timed separately.

    python benchmarks/speed/scale.py                 # 10k and 100k tiers
    python benchmarks/speed/scale.py --tiers 1m      # the opt-in 1M tier
    python benchmarks/speed/scale.py --write         # also update docs/results/history.md
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import localmem.recall.pipeline as pipeline  # noqa: E402
from benchmarks.speed.ingest import generate_memories  # noqa: E402
from benchmarks.common.results_file import write_section  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.recall.keywords import KeywordScorer  # noqa: E402

CACHE = HERE.parent / ".cache"
TIERS = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
DIMS = 384
SEED = 20261129
NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
STAGES = {  # pipeline-module names timed per recall
    "vector": "vector_candidates", "keyword": "keyword_candidates", "metadata": "metadata_candidates",
    "trending": "trending_candidates", "expansion": "expand_relations", "state filter": "apply_state_filter",
    "relations": "hydrate_relations",
}


# -- building ---------------------------------------------------------------

def base_embeddings(count: int = 1500) -> np.ndarray:
    """Real MiniLM embeddings of generator texts (cached); random if the model is missing."""
    path = CACHE / f"minilm-base-{count}.npy"
    if path.exists():
        return np.load(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    texts = [m["content"] for m in generate_memories(count, seed=SEED + 1)]
    try:
        from localmem.embedders import resolve_embedder
        vectors = np.array(resolve_embedder("auto").embed(texts), dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - benchmark fallback, reported below
        print(f"(model unavailable, random base vectors: {exc})")
        vectors = np.random.default_rng(SEED).standard_normal((count, DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(path, vectors)
    return vectors


def model_like(n: int, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors mixing two real embeddings plus noise: the model's geometry, n distinct points."""
    a = base[rng.integers(0, len(base), n)]
    b = base[rng.integers(0, len(base), n)]
    noise = rng.standard_normal((n, base.shape[1])).astype(np.float32) * 0.03
    out = 0.8 * a + 0.45 * b + noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def build(n: int, path: Path, say: Callable[[str], None]) -> dict[str, Any]:
    rng = np.random.default_rng(SEED + n)
    base = base_embeddings()
    items = generate_memories(n, seed=SEED)
    vectors = model_like(n, base, rng)
    for item, vector in zip(items, vectors):
        item["embedding"] = vector
    store = MemoryStore(path, embedder="hash", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        clock=lambda: NOW)
    started = time.perf_counter()
    batch = 5000
    for start in range(0, n, batch):
        store.store_many(items[start:start + batch])
        if start and start % (batch * 10) == 0:
            say(f"  stored {start:,}")
    ingest_s = time.perf_counter() - started
    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
    pyrng = random.Random(SEED)
    types = ["RELATES_TO", "LEADS_TO", "PART_OF", "DERIVED_FROM", "REINFORCES", "EXEMPLIFIES"]
    for _ in range(n // 10):
        a, b = pyrng.sample(ids, 2)
        store.associate(a, b, type=pyrng.choice(types), strength=round(pyrng.uniform(0.2, 1.0), 2))
    for old in pyrng.sample(ids, n // 100):
        store.supersede(old, f"Update: {pyrng.choice(items)['content']}",
                        embedding=vectors[pyrng.randrange(n)])
    store.close()
    return {"n": n, "ingest_s": ingest_s, "ingest_per_s": n / ingest_s}


def cached(n: int, rebuild: bool, say: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """The tier's store, built in a child process (so this one's RSS is the reader's alone)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path, info_path = CACHE / f"scale-{n}.db", CACHE / f"scale-{n}.json"
    if rebuild or not path.exists() or not info_path.exists():
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), info_path):
            p.unlink(missing_ok=True)
        say(f"building {n:,} memories ...")
        subprocess.run([sys.executable, __file__, "--build", str(n)], check=True)
    return path, json.loads(info_path.read_text())


def build_child(n: int) -> None:
    path, info_path = CACHE / f"scale-{n}.db", CACHE / f"scale-{n}.json"
    started = time.perf_counter()
    info = build(n, path, functools.partial(print, flush=True))
    info["build_s"] = time.perf_counter() - started  # memories, edges and supersessions
    info_path.write_text(json.dumps(info))


def current_rss_mb(field: str = "RssAnon") -> float:
    """This process's resident memory: RssAnon is its own (heap, arrays); VmRSS also counts
    the pages of the file it has mapped (mmap), which are the OS page cache, shared."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- workload -----------------------------------------------------------------

def workload(store: MemoryStore, count: int) -> list[tuple[str, dict[str, Any], bytes]]:
    """(mode, recall kwargs, query vector): plain, tag-scoped (one whole tag, or a
    first segment shared by a third of all memories), time-windowed, expand_relations."""
    rng = random.Random(SEED + 7)
    npr = np.random.default_rng(SEED + 7)
    sample = list(store.conn.execute(
        "SELECT m.content, m.tags, e.embedding FROM memories AS m JOIN memory_embeddings AS e "
        "ON e.pk = m.pk WHERE m.pk % 97 = 0 LIMIT ?", (count,)))
    modes = ["plain", "tag-scoped (one tag)", "tag-scoped (broad prefix)", "time-windowed",
             "expand_relations"]
    out = []
    for i in range(count):
        content, tags, blob = sample[i % len(sample)]
        words = re.findall(r"[A-Za-z]{4,}", content)
        query = " ".join(rng.sample(words, min(len(words), rng.randint(2, 5)))) or content[:20]
        vector = np.frombuffer(blob, dtype=np.float32) + npr.standard_normal(DIMS).astype(np.float32) * 0.04
        vector /= np.linalg.norm(vector)
        mode = modes[i % len(modes)]
        kwargs: dict[str, Any] = {"query": query, "limit": 10}
        if mode == "tag-scoped (one tag)":  # e.g. project:alpha, 1-7% of memories
            kwargs["tags"] = [json.loads(tags)[0]]
        elif mode == "tag-scoped (broad prefix)":  # e.g. project, about a third of memories
            kwargs["tags"] = [json.loads(tags)[0].split(":")[0]]
        elif mode == "time-windowed":
            kwargs["time_query"] = rng.choice(["last 30 days", "last month", "this year", "last week"])
        elif mode == "expand_relations":
            kwargs["expand_relations"] = True
        out.append((mode, kwargs, vector.astype(np.float32).tobytes()))
    return out


# -- measuring ----------------------------------------------------------------

class StageTimer:
    """Wraps pipeline functions to add their time per recall into ``current``
    (milliseconds on ``clock``: wall time by default, or ``time.process_time``)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.current: dict[str, float] = {}
        self.saved: dict[str, Any] = {}

    def __enter__(self) -> "StageTimer":
        for stage, name in STAGES.items():
            original = getattr(pipeline, name)
            self.saved[name] = original
            setattr(pipeline, name, self._wrap(stage, original))
        self.saved["scores"] = KeywordScorer.scores
        KeywordScorer.scores = self._wrap("keyword", KeywordScorer.scores)
        return self

    def _wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.current[stage] = self.current.get(stage, 0.0) + (self.clock() - started) * 1000
        return timed

    def __exit__(self, *exc: object) -> None:
        for name, original in self.saved.items():
            if name == "scores":
                KeywordScorer.scores = original
            else:
                setattr(pipeline, name, original)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure_tier(name: str, n: int, args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    path, info = cached(n, args.rebuild, say)
    store = MemoryStore(path, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        clock=lambda: NOW)
    work = workload(store, args.queries)
    for _mode, kwargs, vector in work[:10]:  # warm the page cache and statements
        store.recall(embedding=vector, **kwargs)
    per_mode: dict[str, list[float]] = {}
    stages: dict[str, list[float]] = {}
    with StageTimer() as timer:
        for mode, kwargs, vector in work:
            timer.current = {}
            started = time.perf_counter()
            store.recall(embedding=vector, **kwargs)
            per_mode.setdefault(mode, []).append((time.perf_counter() - started) * 1000)
            for stage, ms in timer.current.items():
                stages.setdefault(stage, []).append(ms)

    reader_rss = current_rss_mb()  # after the latency run, before the float32 matrix of the floor
    mapped_rss = current_rss_mb("VmRSS")
    index_mb = store.backend.code_index.describe()["bytes"] / 1e6
    # The exact-scan floor and the vector leg's recall@10 against exact search.
    matrix = np.frombuffer(b"".join(r[0] for r in store.conn.execute(
        "SELECT embedding FROM memory_embeddings ORDER BY pk")), dtype=np.float32).reshape(-1, DIMS)
    pks = np.array([r[0] for r in store.conn.execute("SELECT pk FROM memory_embeddings ORDER BY pk")])
    floor_ms, vector_ms, hits = [], [], []
    from localmem.recall.channels import make_scope, vector_candidates
    from localmem.recall.params import parse_recall_params
    params = parse_recall_params({}, store.config, store.dimensions, NOW)
    scope = make_scope(params, store.config.excluded_types)
    id_of = dict(store.conn.execute("SELECT pk, id FROM memories"))
    for _mode, _kwargs, vector in work[: min(100, len(work))]:
        q = np.frombuffer(vector, dtype=np.float32)
        started = time.perf_counter()
        sims = matrix @ q
        top = np.argpartition(-sims, 10)[:10]
        floor_ms.append((time.perf_counter() - started) * 1000)
        exact = {id_of[int(pks[i])] for i in top}
        started = time.perf_counter()
        found = vector_candidates(store._backend, scope, vector, 10)
        vector_ms.append((time.perf_counter() - started) * 1000)
        hits.append(len(exact & {c["id"] for c in found[:10]}) / 10)
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    store.close()
    return {
        "tier": name, "n": n, "info": info,
        "modes": {m: (statistics.median(v), pct(v, 0.95)) for m, v in per_mode.items()},
        "stages": {s: (statistics.median(v), pct(v, 0.95)) for s, v in stages.items()},
        "floor_ms": statistics.median(floor_ms), "vector_ms": statistics.median(vector_ms),
        "vector_recall": sum(hits) / len(hits),
        "size_mb": size / 1e6, "rss_mb": reader_rss, "mapped_rss_mb": mapped_rss, "index_mb": index_mb,
    }


# -- other vector shapes ------------------------------------------------------

SHAPES = ("minilm-like", "anisotropic", "768 dims", "1536 dims", "clustered")


def unit_rows(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def shape_vectors(shape: str, n: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(stored, query) vectors of one shape; queries are stored vectors plus noise, or fresh cluster points."""
    rng = np.random.default_rng(SEED + 99)
    if shape == "clustered":  # 200 tight clusters: neighbours differ by little
        dims = DIMS
        centres = unit_rows(rng.standard_normal((200, dims)))
        spread = 0.3 / np.sqrt(dims)
        stored = unit_rows(centres[rng.integers(0, 200, n)] + spread * rng.standard_normal((n, dims)))
        asked = unit_rows(centres[rng.integers(0, 200, queries)] + spread * rng.standard_normal((queries, dims)))
        return stored, asked
    stored = model_like(n, base_embeddings(), rng)
    asked = unit_rows(stored[rng.integers(0, n, queries)] + 0.04 * rng.standard_normal((queries, DIMS)))
    if shape == "anisotropic":  # one strong common direction and unequal spreads, as bge/e5 give
        common = unit_rows(rng.standard_normal(DIMS))
        scale = np.linspace(0.4, 1.6, DIMS).astype(np.float32)
        stored, asked = (unit_rows(unit_rows(x * scale) + 1.2 * common) for x in (stored, asked))
    elif shape.endswith("dims"):  # the same geometry in a wider space (a random projection)
        width = int(shape.split()[0])
        projection = rng.standard_normal((DIMS, width)).astype(np.float32)
        stored, asked = unit_rows(stored @ projection), unit_rows(asked @ projection)
    return stored, asked


def measure_shape(shape: str, n: int, queries: int, say: Callable[[str], None]) -> dict[str, Any]:
    from localmem.recall.channels import make_scope, vector_candidates
    from localmem.recall.params import parse_recall_params

    stored, asked = shape_vectors(shape, n, queries)
    path = CACHE / f"shape-{shape.replace(' ', '-')}-{n}.db"
    if not path.exists():
        say(f"  building {shape} ({n:,} x {stored.shape[1]}) ...")
        tmp = path.with_suffix(".tmp")
        for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            p.unlink(missing_ok=True)
        builder = MemoryStore(tmp, embedder=f"hash:{stored.shape[1]}",
                              config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
        for start in range(0, n, 5000):
            builder.store_many([{"content": f"memory {i}", "embedding": stored[i]}
                                for i in range(start, min(n, start + 5000))])
        builder.close()
        tmp.rename(path)
    store = MemoryStore(path, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
    backend = store.backend
    pks = np.array([r[0] for r in store.conn.execute("SELECT pk FROM memories ORDER BY pk")])
    id_of = dict(store.conn.execute("SELECT pk, id FROM memories"))
    params = parse_recall_params({}, store.config, store.dimensions, NOW)
    scope = make_scope(params, store.config.excluded_types)
    vector_candidates(backend, scope, asked[0].tobytes(), 10)  # load the codes
    hits, leg, floor = [], [], []
    for q in asked:
        started = time.perf_counter()
        top = np.argpartition(-(stored @ q), 10)[:10]
        floor.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        found = vector_candidates(backend, scope, q.tobytes(), 10)
        leg.append((time.perf_counter() - started) * 1000)
        hits.append(len({id_of[int(pks[i])] for i in top} & {c["id"] for c in found}) / 10)
    calibration = store.conn.execute(
        "SELECT generation, depth_1bit, depth_3bit, sample_recall FROM vector_calibration").fetchone()
    store.close()
    return {"shape": shape, "n": n, "dims": stored.shape[1], "recall": float(np.mean(hits)),
            "worst": float(np.min(hits)), "leg_ms": statistics.median(leg),
            "floor_ms": statistics.median(floor), "calibration": calibration}


def render_shapes(rows: list[dict[str, Any]]) -> str:
    lines = ["Vector shapes (the vector leg alone, `--shapes`): recall@10 of the code scan + exact rescoring "
             "against exact search, and its median time against the numpy float32 scan of the same vectors.", "",
             "| shape | memories | dims | recall@10 | worst query | vector leg ms | numpy floor ms | ÷ floor "
             "| calibration generation | measured depth 1-bit / 3-bit |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        generation, depth1, depth3, _sample_recall = r["calibration"]
        lines.append(f"| {r['shape']} | {r['n']:,} | {r['dims']} | {r['recall']:.3f} | {r['worst']:.1f} | "
                     f"{r['leg_ms']:.2f} | {r['floor_ms']:.2f} | {r['leg_ms'] / r['floor_ms']:.2f} | "
                     f"{generation} | {depth1:.4f} / {depth3:.4f} |")
    return "\n".join(lines)


def render(results: list[dict[str, Any]], command: str) -> str:
    lines = [f"Command: `{command}`  ",
             f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}; "
             f"nproc {os.cpu_count()}; warm process, query embeddings passed in.", "",
             "| tier | mode | p50 ms | p95 ms |", "|---|---|---:|---:|"]
    for r in results:
        for mode, (p50, p95) in r["modes"].items():
            lines.append(f"| {r['tier']} | {mode} | {p50:.1f} | {p95:.1f} |")
    lines += ["", "| tier | stage | p50 ms | p95 ms |", "|---|---|---:|---:|"]
    for r in results:
        for stage, (p50, p95) in sorted(r["stages"].items()):
            lines.append(f"| {r['tier']} | {stage} | {p50:.2f} | {p95:.2f} |")
    lines += ["", "| tier | numpy float32 floor ms | vector leg ms | ÷ floor | vector recall@10 vs exact "
              "| store_many memories/s (build) | build s (with edges) | file MB | code index in RAM MB "
              "| reader RSS MB (own / with mapped file pages) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        build_s = r["info"].get("build_s")
        lines.append(f"| {r['tier']} | {r['floor_ms']:.2f} | {r['vector_ms']:.2f} | "
                     f"{r['vector_ms'] / r['floor_ms']:.2f} | {r['vector_recall']:.3f} | "
                     f"{r['info']['ingest_per_s']:,.0f} | {'' if build_s is None else f'{build_s:.0f}'} | "
                     f"{r['size_mb']:.0f} | {r['index_mb']:.0f} | {r['rss_mb']:.0f} / {r['mapped_rss_mb']:.0f} |")
    lines += ["", "Ratios to the numpy floor of the same run (the targets of issue 15):", "",
              "| tier | mode | p50 ÷ floor | p95 ÷ floor |", "|---|---|---:|---:|"]
    for r in results:
        for mode, (p50, p95) in r["modes"].items():
            lines.append(f"| {r['tier']} | {mode} | {p50 / r['floor_ms']:.2f} | {p95 / r['floor_ms']:.2f} |")
    return "\n".join(lines)


def write_results(body: str) -> None:
    write_section("scale", f"## Speed at scale\n\n{body}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="10k,100k", help="comma-separated: 10k, 100k, 1m")
    parser.add_argument("--queries", type=int, default=240)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--shapes", default="", help=f"comma-separated, or 'all': {', '.join(SHAPES)}")
    parser.add_argument("--shape-n", type=int, default=100_000)
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)  # internal: build one tier here
    args = parser.parse_args(argv)
    if args.build:
        build_child(args.build)
        return 0
    say = functools.partial(print, flush=True)
    results = []
    for name in [t for t in args.tiers.split(",") if t]:
        say(f"tier {name}")
        results.append(measure_tier(name, TIERS[name], args, say))
    shapes = SHAPES if args.shapes == "all" else [s for s in args.shapes.split(",") if s]
    shape_rows = []
    for shape in shapes:
        say(f"shape {shape}")
        shape_rows.append(measure_shape(shape, args.shape_n, min(args.queries, 100), say))
    command = "python benchmarks/speed/scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    body = render(results, command.strip())
    if shape_rows:
        body += "\n\n" + render_shapes(shape_rows)
    print(body)
    if args.write:
        write_results(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
