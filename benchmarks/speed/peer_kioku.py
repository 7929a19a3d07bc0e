"""Warm recall against kioku-lite on the same machine: the same memories, questions and encoder.

Issue 44 item 3 sets localmem's warm recall beside kioku-lite's (9 ms p50, its own figure on
another machine). This script reads both here, in one run, so the figure is a ratio of two stores and not
of two machines. kioku-lite (PyPI ``kioku-lite==0.2.0``, MIT) is installed in a venv of its own,
never in localmem's:

    /usr/bin/python3 -m venv /tmp/peer9/kvenv && /tmp/peer9/kvenv/bin/pip install kioku-lite==0.2.0

with a Python whose sqlite3 can load extensions (Debian's; the pyenv build on this machine cannot,
and kioku-lite then runs without its vector search, saying so only in a log warning: the script
refuses such a venv).

Its paths (KIOKU_LITE_DATA_DIR, KIOKU_LITE_MEMORY_DIR, KIOKU_LITE_USER_ID and HOME) always point
into a temporary folder, and its own embedder is the ``fake`` one, replaced before any use by this
script's all-MiniLM-L6-v2 object (``embed``, ``embed_batch``, ``dimensions``): fastembed never
loads or downloads a model. That encoder runs localmem's own ONNX export of the model (the
folder ``localmem embedder export`` writes, found under ~/.cache/localmem/onnx) with onnxruntime,
two threads, no spinning, mean pooling and unit length: the same model, graph and runtime as
localmem's document vectors. localmem encodes a query with its query graph (the same model with
the learned query delta, plain and tuned rows in one run); each side's encoder is also timed alone.

Memories: one per LoCoMo dev turn, as benchmarks/quality/locomo.py stores them (the localmem store
at ``--store FILE``, built from the embedding cache when missing; kioku-lite's through its own
``save_memory``, with the turn's date as ``event_time``). Questions: every ``--every``-th LoCoMo
question (recall_stages.py's), none of them seen before it is timed: both sides are warmed on 20
questions that are not timed, and localmem's query-vector cache is emptied before each recall.

Modes: ``unscoped`` (the whole store, both sides: kioku-lite has no conversation scope) and
``scoped`` (localmem alone, tagged with the question's conversation, as recall_stages.py runs it).
Both take ``--limit`` results (20, locomo.py's); localmem with ``adaptive_floor`` off and access
tracking on as a user has it (``--no-track-access``: off). Each side is its own warm process (a
worker per venv, one JSON line each way); they take turns question by question, going first in
turn, over ``--rounds`` rounds. Reported: p50 / p95 wall and process CPU per mode and side, the
ratio localmem ÷ kioku-lite per round and overall (median of the per-question ratios), the encoders
alone, and R@10 / MRR against the LoCoMo evidence from the same answers. ``--peer-stages`` then times
kioku-lite's search stage by stage (recall_stages.py is localmem's).

    python benchmarks/speed/peer_kioku.py --store FILE [--peer-python /tmp/peer9/kvenv/bin/python]
        [--every 2] [--rounds 3] [--limit 20] [--gap 0.05] [--peer-dir DIR] [--no-track-access]
        [--peer-stages [--stage-clock wall|process]]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_PEER_PYTHON = "/tmp/peer9/kvenv/bin/python"
PEER_PACKAGE = "kioku-lite==0.2.0"
MODEL = "all-MiniLM-L6-v2"
WARM_QUESTIONS = 20
CLOCKS = {"wall": time.perf_counter, "process": time.process_time}
LOADS_EXTENSIONS = "import sqlite3; sqlite3.connect(':memory:').enable_load_extension"
SIDES = ("localmem", "kioku")


# ---- pure parts (tests/test_peer_kioku.py) -------------------------------------------------------

def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def turn_order(turn: int, sides: Sequence[str] = SIDES) -> list[str]:
    """Which side goes first on the ``turn``-th paired question: each in turn."""
    return list(sides) if turn % 2 == 0 else list(sides)[::-1]


def content_hash(text: str) -> str:
    """kioku-lite's key of a memory (service.save_memory): the SHA-256 of its text."""
    return hashlib.sha256(text.encode()).hexdigest()


def hash_keys(memories: Iterable[dict]) -> dict[str, list[str]]:
    """Each content hash -> the turns (``conv:N/D1:2``) with that text, in store order: kioku-lite
    keeps one memory per distinct text, and an answer of it stands for every turn it carries."""
    keys: dict[str, list[str]] = {}
    for memory in memories:
        keys.setdefault(content_hash(memory["content"]), []).append(memory["key"])
    return keys


def expand(hashes: Iterable[str], keys: dict[str, list[str]]) -> list[str]:
    """kioku-lite's ranked hashes as ranked turns (a shared text's turns at its rank)."""
    return [key for h in hashes for key in keys.get(h, [])]


def scores(ranked: Sequence[str], evidence: set[str], k: int = 10) -> dict[str, float]:
    """R@k (the share of the evidence turns in the first k) and MRR, as locomo.py counts them."""
    found = len(evidence & set(ranked[:k])) / len(evidence)
    first = next((i for i, key in enumerate(ranked) if key in evidence), None)
    return {f"R@{k}": found, "MRR": 1.0 / (first + 1) if first is not None else 0.0}


def paired_ratios(mine: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """mine ÷ theirs question by question (a zero on their side is left out)."""
    if len(mine) != len(theirs):
        raise ValueError(f"paired lists differ in length: {len(mine)} and {len(theirs)}")
    return [a / b for a, b in zip(mine, theirs) if b > 0]


def ratio_rows(times: dict[str, dict[str, list[list[float]]]], measure: str) -> list[str]:
    """One table row per round and one overall: localmem unscoped ÷ kioku-lite unscoped and
    localmem scoped ÷ kioku-lite unscoped, each the median of the per-question ratios, and the
    ratio of the p50s. ``times[mode][side]`` holds one list of ms per round; ``measure`` is wall or cpu."""
    rows = [f"| round | {measure}: unscoped ÷ kioku-lite (median per question) | p50 ÷ p50 "
            "| scoped ÷ kioku-lite unscoped (median per question) | p50 ÷ p50 |",
            "|---|---:|---:|---:|---:|"]
    peer = times["unscoped"]["kioku"]
    rounds = len(peer)
    labels = [str(n + 1) for n in range(rounds)] + ["all"]
    for n, label in enumerate(labels):
        pick = (lambda lists: lists[n]) if n < rounds else (lambda lists: [x for r in lists for x in r])
        cells = []
        for mode in ("unscoped", "scoped"):
            mine, theirs = pick(times[mode]["localmem"]), pick(peer)
            cells.append(f"{statistics.median(paired_ratios(mine, theirs)):.3f}")
            cells.append(f"{statistics.median(mine) / statistics.median(theirs):.3f}")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return rows


def latency_rows(times: dict[str, dict[str, list[list[float]]]], cpu: dict[str, dict[str, list[list[float]]]]
                 ) -> list[str]:
    """p50 / p95 / mean per mode and side over every round, wall and process CPU (ms)."""
    rows = ["| side, mode | wall p50 | wall p95 | wall mean | CPU p50 | CPU p95 | recalls |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for mode, sides in times.items():
        for side, lists in sides.items():
            wall = [x for r in lists for x in r]
            used = [x for r in cpu[mode][side] for x in r]
            name = "kioku-lite" if side == "kioku" else side
            rows.append(f"| {name}, {mode} | {statistics.median(wall):.2f} | {pct(wall, 0.95):.2f} | "
                        f"{statistics.fmean(wall):.2f} | {statistics.median(used):.2f} | {pct(used, 0.95):.2f} | "
                        f"{len(wall)} |")
    return rows


def quality_rows(answers: dict[str, list[list[str]]], evidence: Sequence[set[str]], k: int = 10) -> list[str]:
    """R@k and MRR per answer list (``answers[label]``, one ranked list of turns per question)."""
    rows = [f"| answers | R@{k} | MRR | questions |", "|---|---:|---:|---:|"]
    for label, ranked in answers.items():
        if len(ranked) != len(evidence):
            raise ValueError(f"{label}: {len(ranked)} answers for {len(evidence)} questions")
        got = [scores(r, e, k) for r, e in zip(ranked, evidence)]
        rows.append(f"| {label} | {statistics.fmean(g[f'R@{k}'] for g in got):.4f} | "
                    f"{statistics.fmean(g['MRR'] for g in got):.4f} | {len(got)} |")
    return rows


def peer_missing(python: str, probe: Callable[[list[str]], int] | None = None) -> str | None:
    """Why the peer's venv cannot run (None when it can): how to make it, in words."""
    how = (f"make it with: /usr/bin/python3 -m venv {Path(python).parents[1]} && "
           f"{Path(python).parent / 'pip'} install {PEER_PACKAGE}  (a Python whose sqlite3 loads extensions, "
           "as Debian's does; never into localmem's venv)")
    if not Path(python).exists():
        return f"kioku-lite's venv is missing: no {python}; {how}"
    run = probe or (lambda cmd: subprocess.run(cmd, capture_output=True).returncode)
    if run([python, "-c", "import kioku_lite.service, sqlite_vec, onnxruntime, tokenizers"]) != 0:
        return f"{python} cannot import kioku_lite (or its sqlite_vec, onnxruntime, tokenizers); {how}"
    if run([python, "-c", LOADS_EXTENSIONS]) != 0:
        return (f"{python}'s sqlite3 cannot load extensions, so kioku-lite would run without its vector "
                f"search (it only logs a warning); {how}")
    return None


def find_export(root: Path, model: str = MODEL) -> tuple[Path, Path]:
    """(the ONNX file, the tokenizer.json) of the newest export of ``model`` under ``root``."""
    found = []
    for described in root.glob("*/export.json"):
        info = json.loads(described.read_text())
        onnx = described.parent / "model.onnx"
        tokenizer = Path(info.get("folder", "")) / "tokenizer.json"
        if info.get("model") == model and onnx.exists() and tokenizer.exists():
            found.append((described.stat().st_mtime, onnx, tokenizer))
    if not found:
        raise SystemExit(f"no ONNX export of {model} under {root}: run 'localmem embedder export' in localmem's venv")
    _, onnx, tokenizer = max(found)
    return onnx, tokenizer


# ---- the plan both workers read --------------------------------------------------------------------

def make_plan(data_path: str, every: int) -> dict[str, Any]:
    """Memories (locomo.py's, with their turn keys and dates) and the questions: timed (every
    ``every``-th) and warming (the first 20 of the rest), with their conversation and evidence."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.quality.locomo import memory_item, questions_of, turns_of
    data = json.loads(Path(data_path).read_text())
    memories, questions = [], []
    for index, sample in enumerate(data):
        turns = turns_of(sample)
        for turn in turns:
            item = memory_item(turn, index)
            memories.append({"content": item["content"], "key": f"conv:{index}/{turn['dia_id']}",
                             "event_time": turn["timestamp"][:10], "tags": item["tags"]})
        for q in questions_of(sample, {t["dia_id"] for t in turns}):
            questions.append({"question": q["question"], "conv_tag": f"conv:{index}",
                              "evidence": sorted(f"conv:{index}/{d}" for d in q["evidence"])})
    timed = questions[::every]
    rest = [q for n, q in enumerate(questions) if n % every] or questions[1::2]
    return {"memories": memories, "timed": timed, "warm": rest[:WARM_QUESTIONS]}


# ---- workers -------------------------------------------------------------------------------------

class MiniLM:
    """all-MiniLM-L6-v2 through onnxruntime from localmem's export: kioku-lite's embedder object."""

    dimensions = 384

    def __init__(self, onnx: str, tokenizer: str) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        self.np = np
        self.session = ort.InferenceSession(onnx, sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(tokenizer)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        np = self.np
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        tokens = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        summed = (tokens * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        unit = summed / np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12)
        return unit.astype(np.float32).tolist()

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]


def kioku_worker(plan: dict[str, Any], folder: Path, onnx: str, tokenizer: str) -> None:
    """kioku-lite's side: its store in ``folder`` (built through save_memory when new), then
    answers. Run by kioku-lite's venv with KIOKU_LITE_* and HOME set into ``folder``."""
    from kioku_lite.config import Settings
    from kioku_lite.service import KiokuLiteService
    settings = Settings()
    for path in (settings.data_dir, settings.memory_dir):
        if not str(path).startswith(str(folder)):
            raise SystemExit(f"kioku-lite's path {path} is outside {folder}: refusing to run")
    service = KiokuLiteService(settings)
    if not service.db.vec_enabled:
        raise SystemExit("kioku-lite could not load sqlite-vec: its vector search would be off")
    if type(service.embedder).__name__ != "FakeEmbedder":
        raise SystemExit(f"kioku-lite made {type(service.embedder).__name__}, not its fake embedder")
    encoder = MiniLM(onnx, tokenizer)
    service.embedder = encoder
    built = service.db.memory.count()
    if built == 0:
        for memory in plan["memories"]:
            service.save_memory(memory["content"], tags=memory["tags"], event_time=memory["event_time"])
        built = service.db.memory.count()
    if built != len(hash_keys(plan["memories"])):
        raise SystemExit(f"kioku-lite's store in {folder} holds {built} memories, not the plan's "
                         f"{len(hash_keys(plan['memories']))} distinct texts: give an empty --peer-dir")

    def recall(q: dict, limit: int) -> list[str]:
        return [r["content_hash"] for r in service.search_memories(q["question"], limit=limit)["results"]]

    def stages(limit: int, clock: str) -> list[str]:
        return kioku_stages(service, plan["timed"], limit, CLOCKS[clock])

    serve(plan, {"unscoped": recall}, encoder.embed, {"memories": built, "search": "KiokuLiteService.search_memories",
                                                      "encoder": "onnxruntime, localmem's ONNX export, mean pooling"},
          stages)
    service.close()


def kioku_stages(service: Any, questions: list[dict], limit: int, clock: Callable[[], float]) -> list[str]:
    """kioku-lite's search_memories stage by stage on ``clock`` (benchmarks/common/stage_spans.py),
    every timed question once: the rows of the table, ms per recall."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.common.stage_spans import Spans
    from kioku_lite import service as service_module
    from kioku_lite.pipeline.memory_store import MemoryStore
    from kioku_lite.pipeline.graph_store import GraphStore
    stages = [(service_module.KiokuLiteService, "search_memories", "search_memories"),
              (service_module.KiokuLiteService, "_extract_temporal_range", "date range read from the query"),
              (service_module, "bm25_search", "BM25 leg (FTS5, every word required)"),
              (service_module, "vector_search", "vector leg"),
              (MiniLM, "embed", "query encoding"),
              (MemoryStore, "search_vec", "sqlite-vec kNN (exact)"),
              (service_module, "graph_search", "graph leg (empty graph)"),
              (GraphStore, "search_nodes", "node look-ups"),
              (service_module, "rrf_rerank", "RRF fusion"),
              (MemoryStore, "get_by_hashes", "hydration by content hash")]
    found: list[int] = []
    bm25 = service_module.bm25_search

    def counted(*args: Any, **kwargs: Any) -> Any:
        hits = bm25(*args, **kwargs)
        found.append(len(hits))
        return hits

    service_module.bm25_search = counted
    spans = Spans(clock)
    for owner, name, label in stages:
        spans.wrap(owner, name, label)
    try:
        for q in questions:
            service.search_memories(q["question"], limit=limit)
    finally:
        spans.restore()
        service_module.bm25_search = bm25
    rows = spans.table(len(questions), [label for _, _, label in stages])
    inside = sum(total for label, total in spans.total.items() if spans.parent.get(label) == "search_memories")
    rows.append(f"| search_memories outside these stages | "
                f"{(spans.total['search_memories'] - inside) * 1000 / len(questions):.2f} | |")
    rows.append(f"| questions whose BM25 leg found anything: {sum(1 for n in found if n)} of {len(found)} | | |")
    return rows


def localmem_worker(plan: dict[str, Any], store_path: str, data: str, embedder: str) -> None:
    """localmem's side: the store at ``store_path`` (built from the embedding cache when
    missing), the query-vector cache emptied before each recall and each encoding."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.speed import small_store
    from localmem import Config
    from localmem.recall import learned_rank
    config = Config.from_env(dict(os.environ))
    store, _, _ = small_store.open_store(json.loads(Path(data).read_text()), embedder, Path(store_path), config)
    backend = store._backend
    delta = learned_rank.TreeModel.packaged().query_delta

    def keys(response: dict) -> list[str]:
        out = []
        for r in response["results"]:
            conv = next((t for t in r["memory"]["tags"] if t.startswith("conv:")), "?")
            out.append(f"{conv}/{r['memory']['metadata'].get('dia_id')}")
        return out

    def unscoped(q: dict, limit: int) -> list[str]:
        backend._query_cache.clear()
        return keys(store.recall(q["question"], limit=limit, adaptive_floor=False))

    def scoped(q: dict, limit: int) -> list[str]:
        backend._query_cache.clear()
        return keys(store.recall(q["question"], tags=[q["conv_tag"]], limit=limit, adaptive_floor=False))

    def encode(text: str) -> Any:
        backend._query_cache.clear()
        return backend.embed_query(text, delta)

    serve(plan, {"unscoped": unscoped, "scoped": scoped}, encode,
          {"memories": store.health()["memory_count"], "search": "MemoryStore.recall",
           "encoder": f"{type(store.embedder).__name__}: the query graph (plain and tuned rows)",
           "track_access": config.track_access})
    store.close()


def serve(plan: dict[str, Any], modes: dict[str, Callable[[dict, int], list[str]]],
          encode: Callable[[str], Any], facts: dict[str, Any],
          stages: Callable[[int, str], list[str]] | None = None) -> None:
    """Warm on the warming questions, say ready, then answer one JSON request a line:
    {"op": "recall", "mode", "i", "limit"} -> ms (wall), cpu (the process's, every thread), ranked;
    {"op": "encode", "i"} -> the encoder alone on question i's text with " ?" (a text never seen);
    {"op": "vectors", "texts"} -> the encoder's unit vectors (to check both sides encode alike);
    {"op": "stages", "limit", "clock"} -> rows of the side's stage table (``stages``), when it has one."""
    for q in plan["warm"]:
        for ask in modes.values():
            ask(q, 20)
    print(json.dumps({"ready": True, **facts}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "vectors":
            vectors = [encode_plain(encode, t).tolist() for t in request["texts"]]
            print(json.dumps({"vectors": vectors}), flush=True)
            continue
        if request["op"] == "stages":
            rows = stages(request["limit"], request["clock"]) if stages else []
            print(json.dumps({"rows": rows}), flush=True)
            continue
        q = plan["timed"][request["i"]]
        wall, cpu = time.perf_counter(), time.process_time()
        if request["op"] == "encode":
            encode(q["question"] + " ?")
            ranked: list[str] = []
        else:
            ranked = modes[request["mode"]](q, request["limit"])
        print(json.dumps({"ms": (time.perf_counter() - wall) * 1000, "cpu": (time.process_time() - cpu) * 1000,
                          "ranked": ranked}), flush=True)


def encode_plain(encode: Callable[[str], Any], text: str) -> Any:
    """The plain (untuned) query vector of either side's encoder, as float32 numbers."""
    import numpy as np
    found = encode(text)
    vector = getattr(found, "vector", found)
    return np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else np.asarray(vector, np.float32)


# ---- the run -------------------------------------------------------------------------------------

class Worker:
    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line:
            raise SystemExit(f"the worker {' '.join(command[:3])} ended before it was ready (its stderr is above)")
        self.facts = json.loads(line)

    def ask(self, request: dict) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo-dev.json"))
    parser.add_argument("--store", help="localmem's store file (built from the embedding cache when missing)")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--peer-python", default=DEFAULT_PEER_PYTHON,
                        help="kioku-lite's venv's python (its sqlite3 must load extensions)")
    parser.add_argument("--peer-dir", help="kioku-lite's folder, kept (built when empty); default: a temporary one")
    parser.add_argument("--onnx-root", default=str(Path.home() / ".cache" / "localmem" / "onnx"))
    parser.add_argument("--every", type=int, default=2, help="time every Nth LoCoMo question")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds of pause before each timed request")
    parser.add_argument("--no-track-access", action="store_true", help="localmem's access tracking off")
    parser.add_argument("--peer-stages", action="store_true",
                        help="also time kioku-lite's search stage by stage (after the paired rounds)")
    parser.add_argument("--stage-clock", choices=tuple(CLOCKS), default="wall",
                        help="--peer-stages' clock: wall, or process (every thread's CPU time, as recall_stages.py's)")
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("every", "rounds", "limit"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be 1 or more, got {getattr(args, name)}")
    if args.gap < 0:
        parser.error(f"--gap must be 0 or more, got {args.gap}")
    if args.limit < 10:
        parser.error(f"--limit must be 10 or more (R@10 is read from the answers), got {args.limit}")
    if args.worker:
        plan = json.loads(Path(args.plan).read_text())
        if args.worker == "kioku":
            kioku_worker(plan, Path(args.peer_dir), args.onnx, args.tokenizer)
        else:
            localmem_worker(plan, args.store, args.data, args.embedder)
        return 0
    if not args.store:
        parser.error("--store FILE is required (localmem's store; built there when missing)")
    why = peer_missing(args.peer_python)
    if why:
        print(why, file=sys.stderr)
        return 2
    return run(args)


def run(args: argparse.Namespace) -> int:
    scratch = tempfile.TemporaryDirectory(prefix="peer-kioku-")
    plan = make_plan(args.data, args.every)
    plan_file = Path(scratch.name) / "plan.json"
    plan_file.write_text(json.dumps(plan))
    onnx, tokenizer = find_export(Path(args.onnx_root))
    folder = Path(args.peer_dir).resolve() if args.peer_dir else Path(scratch.name) / "kioku"
    folder.mkdir(parents=True, exist_ok=True)
    script = str(Path(__file__).resolve())
    base = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_LITE_")}
    base.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
    peer_env = dict(base, HOME=str(folder), KIOKU_LITE_DATA_DIR=str(folder / "data"),
                    KIOKU_LITE_MEMORY_DIR=str(folder / "memory"), KIOKU_LITE_USER_ID="peer-kioku",
                    KIOKU_LITE_EMBED_PROVIDER="fake", KIOKU_LITE_EMBED_DIM="384")
    peer_env.pop("PYTHONPATH", None)
    mine_env = dict(base, PYTHONPATH=str(ROOT), LOCALMEM_DAEMON="0",
                    LOCALMEM_TRACK_ACCESS="0" if args.no_track_access else "1")
    started = time.perf_counter()
    workers = {
        "kioku": Worker([args.peer_python, script, "--worker", "kioku", "--plan", str(plan_file), "--peer-dir",
                         str(folder), "--onnx", str(onnx), "--tokenizer", str(tokenizer)], peer_env, folder),
        "localmem": Worker([sys.executable, script, "--worker", "localmem", "--plan", str(plan_file), "--store",
                            args.store, "--data", args.data, "--embedder", args.embedder], mine_env, ROOT),
    }
    ready = time.perf_counter() - started
    keys = hash_keys(plan["memories"])
    texts = [q["question"] for q in plan["timed"][:8]]
    check = {side: w.ask({"op": "vectors", "texts": texts})["vectors"] for side, w in workers.items()}
    cosine = min(sum(a * b for a, b in zip(x, y)) for x, y in zip(check["localmem"], check["kioku"]))
    if cosine < 0.9999:  # the figure compares the stores only when both sides encode alike
        for w in workers.values():
            w.close()
        sys.exit(f"the two sides' query vectors differ (min cosine {cosine:.6f} on {len(texts)} questions): "
                 "the peer is not running localmem's MiniLM export; nothing measured")

    count = len(plan["timed"])
    modes = {"unscoped": ("localmem", "kioku"), "scoped": ("localmem",)}
    times = {m: {s: [] for s in sides} for m, sides in modes.items()}
    cpu = {m: {s: [] for s in sides} for m, sides in modes.items()}
    enc = {s: [] for s in SIDES}
    enc_cpu = {s: [] for s in SIDES}
    answers: dict[str, list[list[str]]] = {}
    turn = 0
    for n in range(args.rounds):
        for table in (times, cpu):
            for sides in table.values():
                for lists in sides.values():
                    lists.append([])
        for i in range(count):
            for side in turn_order(turn):
                for mode in [m for m, sides in modes.items() if side in sides]:
                    if args.gap:
                        time.sleep(args.gap)
                    got = workers[side].ask({"op": "recall", "mode": mode, "i": i, "limit": args.limit})
                    times[mode][side][-1].append(got["ms"])
                    cpu[mode][side][-1].append(got["cpu"])
                    if n == 0:
                        ranked = expand(got["ranked"], keys) if side == "kioku" else got["ranked"]
                        answers.setdefault(f"{'kioku-lite' if side == 'kioku' else side}, {mode}", []).append(ranked)
            turn += 1
    for i in range(count):
        for side in turn_order(i):
            if args.gap:
                time.sleep(args.gap)
            got = workers[side].ask({"op": "encode", "i": i})
            enc[side].append(got["ms"])
            enc_cpu[side].append(got["cpu"])
    stage_rows = (workers["kioku"].ask({"op": "stages", "limit": args.limit, "clock": args.stage_clock})["rows"]
                  if args.peer_stages else [])
    facts = {side: w.facts for side, w in workers.items()}
    for w in workers.values():
        w.close()

    shared = sum(1 for turns in keys.values() if len(turns) > 1)
    print(f"LoCoMo dev: localmem {facts['localmem']['memories']} memories, kioku-lite {facts['kioku']['memories']} "
          f"(one per distinct text: {shared} texts are shared by several turns, each answer of such a text stands "
          f"for all its turns); {count} questions (one in {args.every}), {args.rounds} round(s), limit {args.limit}, "
          f"{args.gap} s before each request, localmem access tracking "
          f"{'on' if facts['localmem']['track_access'] else 'off'}; load average {os.getloadavg()[0]:.1f}; "
          f"workers ready in {ready:.0f} s")
    print(f"encoders: localmem {facts['localmem']['encoder']}; kioku-lite {facts['kioku']['encoder']} "
          f"(min cosine of their plain query vectors on {len(texts)} questions {cosine:.6f})")
    print("the graph leg of kioku-lite runs on an empty graph: it is filled only by an agent's kg-index calls\n")
    print("\n".join(latency_rows(times, cpu)))
    print()
    print("\n".join(ratio_rows(times, "wall")))
    print()
    print("\n".join(ratio_rows(cpu, "CPU")))
    print(f"\nthe encoder alone, one question's text + ' ?' (never seen), ms: localmem p50 "
          f"{statistics.median(enc['localmem']):.2f} (CPU {statistics.median(enc_cpu['localmem']):.2f}), "
          f"kioku-lite p50 {statistics.median(enc['kioku']):.2f} (CPU {statistics.median(enc_cpu['kioku']):.2f}); "
          f"localmem ÷ kioku-lite median per question "
          f"{statistics.median(paired_ratios(enc['localmem'], enc['kioku'])):.3f}")
    print("\nquality of the first round's answers against the LoCoMo evidence (turns):")
    evidence = [set(q["evidence"]) for q in plan["timed"]]
    print("\n".join(quality_rows(answers, evidence)))
    if stage_rows:
        print(f"\nkioku-lite's search_memories stage by stage, {args.stage_clock} clock, each timed question once more "
              f"(localmem's: benchmarks/speed/recall_stages.py):")
        print("\n".join(stage_rows))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
