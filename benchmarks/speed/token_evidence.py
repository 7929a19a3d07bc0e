"""What token-level evidence costs: recall latency at 100k, storage per memory, ingest time.

Recall: the 100k store of ``scale.py`` (same memories, vectors, tags, edges
and workload), copied once with synthetic token codes added (one per word of
each memory, drawn around the memory's vector, coded against their mean;
1.5 tokens per word; MiniLM cuts the LoCoMo turns into 1.32).
Each query is asked twice in a row, token evidence on and off, so both see
the same machine; the float32 numpy scan of the same vectors is the floor,
as in scale.py. Query text reaches recall through a stand-in embedder that
returns the workload's query vector and, per query word, a token vector.

Storage and ingest: the five LoCoMo dev conversations with the real model
(ONNX when installed): bytes of token codes per memory, and the time to
embed and store the turns with token evidence on and off, alternating.

    python benchmarks/speed/token_evidence.py [--queries 200] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from benchmarks.speed import scale  # noqa: E402
from benchmarks.common.results_file import write_section  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.recall.learned_rank import TreeModel  # noqa: E402
from localmem.storage.token_codes import encode, measure_centre  # noqa: E402

TOKEN_NOISE = 1.0  # per-token spread around the memory's vector, in units of its length
TOKENS_PER_WORD = 1.5  # MiniLM word pieces and punctuation per word (LoCoMo turns: 1.32; rounded up)
WORDS = re.compile(r"\w+")


def token_vectors(vector: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal((count, vector.shape[0])).astype(np.float32)
    return vector + TOKEN_NOISE * noise / np.sqrt(vector.shape[0])


def with_token_codes(n: int, say: Any) -> Path:
    """scale.py's store of ``n`` memories, copied once with synthetic token codes."""
    source, _ = scale.cached(n, False, say)
    target = scale.CACHE / f"tokens-{n}.db"
    if target.exists():
        return target
    say(f"adding token codes to a copy of {source.name} ...")
    scratch = target.with_suffix(".tmp")
    shutil.copyfile(source, scratch)
    store = MemoryStore(scratch, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}))
    rng = np.random.default_rng(scale.SEED + 16)
    rows = store.conn.execute("SELECT m.pk, m.content, e.embedding FROM memories AS m "
                              "JOIN memory_embeddings AS e ON e.pk = m.pk ORDER BY m.pk").fetchall()
    sample = [token_vectors(np.frombuffer(b, np.float32), 8, rng) for _, _, b in rows[:2000]]
    centre = measure_centre(sample, scale.DIMS)
    with store.conn:
        store.conn.execute("INSERT INTO token_centre (embedder, dims, centre, measured_at) "
                           "VALUES ('hash', ?, ?, ?)", (scale.DIMS, centre.tobytes(),
                                                         datetime.now(timezone.utc).isoformat()))
        for start in range(0, len(rows), 5000):
            batch = []
            for pk, content, blob in rows[start:start + 5000]:
                count = max(1, min(256, round(TOKENS_PER_WORD * len(WORDS.findall(content)))))
                tokens, codes = encode(token_vectors(np.frombuffer(blob, np.float32), count, rng), centre)
                batch.append((pk, tokens, codes))
            store.conn.executemany("INSERT INTO token_codes (pk, tokens, codes) VALUES (?, ?, ?)", batch)
    store.close()
    os.replace(scratch, target)
    return target


class WorkloadEmbedder:
    """Answers each workload query with its prepared vector and per-word token vectors."""

    name, dimensions = "hash", scale.DIMS  # the name the scale store recorded

    def __init__(self) -> None:
        self.known: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, text: str, vector: bytes, rng: np.random.Generator) -> None:
        v = np.frombuffer(vector, np.float32)
        count = max(1, round(TOKENS_PER_WORD * len(WORDS.findall(text))))
        self.known[text] = (v, token_vectors(v, count, rng))

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.known[t][0].tolist() for t in texts]

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list[np.ndarray]]:
        return self.embed(texts), [self.known[t][1] for t in texts]

    def embed_query_tokens(self, texts: list[str], delta: Any) -> list[np.ndarray]:
        # The tuned model's second pass is measured with the real model (measure_query_encoding).
        return [self.known[t][1] for t in texts]


def measure_recall(n: int, queries: int, say: Any) -> dict[str, Any]:
    path = with_token_codes(n, say)
    embedder = WorkloadEmbedder()
    config = Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"})
    store = MemoryStore(path, embedder=embedder, config=config, clock=lambda: scale.NOW)
    work = scale.workload(store, queries)
    rng = np.random.default_rng(scale.SEED + 17)
    for _mode, kwargs, vector in work:
        embedder.add(kwargs["query"], vector, rng)
    # "on" is token evidence without the learned-rank stage; "learned" adds it, with the
    # packaged model told that this stand-in embedder is its own (the features are
    # computed and the trees walked the same way whatever the vectors are).
    reads = []
    for _ in range(5):  # what the first recall of a process pays to read the model file
        started = time.perf_counter()
        packaged = TreeModel.packaged()
        reads.append((time.perf_counter() - started) * 1000)
    store.learned_model = dataclasses.replace(packaged, embedders=(embedder.name,))
    learned = config.with_changes(learned_rank=True)
    config = config.with_changes(learned_rank=False)
    off = config.with_changes(token_evidence=False)
    for _mode, kwargs, _vector in work[:10]:  # warm the page cache and statements
        store.recall(**kwargs)
    times: dict[str, dict[str, list[float]]] = {}
    scored = []
    for index, (mode, kwargs, _vector) in enumerate(work):
        order = [("on", config), ("off", off), ("learned", learned)]
        for label, chosen in order[index % 3:] + order[:index % 3]:
            store.config = chosen
            started = time.perf_counter()
            response = store.recall(**kwargs)
            times.setdefault(mode, {}).setdefault(label, []).append((time.perf_counter() - started) * 1000)
            if label == "on":
                scored.append(response["vector_search"]["token_scored"])
            if label == "learned":
                assert response["learned_rank"]["applied"], response["learned_rank"]
    # recall_v1 (hybrid, no filters) on the plain queries, with and without the learned stage.
    hybrid: dict[str, list[float]] = {"without": [], "learned": []}
    plain = [kwargs["query"] for mode, kwargs, _vector in work if mode == "plain"]
    for index, query in enumerate(plain):
        order = [("without", config), ("learned", learned)]
        for label, chosen in order[index % 2:] + order[:index % 2]:
            store.config = chosen
            started = time.perf_counter()
            response = store.recall_v1(query, k=10)
            hybrid[label].append((time.perf_counter() - started) * 1000)
            assert response["learned_rank"]["applied"] is (label == "learned"), response["learned_rank"]
    # The plain queries with a date of the store named in their text: the learned stage reads
    # it (two features) and, with its year, adds that day's nearest memories as candidates.
    stamps = [row[0] for row in store.conn.execute("SELECT timestamp FROM memories ORDER BY pk")]
    pick = np.random.default_rng(scale.SEED + 23)
    dated: dict[str, list[float]] = {"plain": [], "dated": []}
    added = []
    for index, query in enumerate(plain):
        day = datetime.fromisoformat(stamps[int(pick.integers(len(stamps)))])
        named = f"{query} on {day.day} {day:%B %Y}"
        embedder.known[named] = embedder.known[query]
        order = [("plain", query), ("dated", named)]
        store.config = learned
        for label, text in order[index % 2:] + order[:index % 2]:
            started = time.perf_counter()
            response = store.recall(query=text, limit=10)
            dated[label].append((time.perf_counter() - started) * 1000)
            if label == "dated":
                added.append(response["learned_rank"]["dates_in_query"][0]["added_candidates"])
    store.config = config
    matrix = np.frombuffer(b"".join(r[0] for r in store.conn.execute(
        "SELECT embedding FROM memory_embeddings ORDER BY pk")), dtype=np.float32).reshape(-1, scale.DIMS)
    floor = []
    for _mode, _kwargs, vector in work[:100]:
        q = np.frombuffer(vector, dtype=np.float32)
        started = time.perf_counter()
        np.argpartition(-(matrix @ q), 10)[:10]
        floor.append((time.perf_counter() - started) * 1000)
    codes = store.conn.execute("SELECT count(*), sum(tokens), sum(length(codes)) FROM token_codes").fetchone()
    store.close()
    return {"times": times, "floor_ms": statistics.median(floor), "scored": statistics.median(scored),
            "codes": codes, "hybrid": hybrid, "model_read_ms": statistics.median(reads),
            "dated": dated, "dated_added": statistics.median(added)}


def measure_query_encoding(queries: int) -> dict[str, Any]:
    """What the packaged model's query delta adds to embedding a query, with the real model
    (ONNX when installed): the plain pass (vector and tokens) against the plain pass plus
    the tuned tokens' pass, alternating, over LoCoMo dev questions; and the first tuned
    call, which makes the tuned copy of the model."""
    from benchmarks.quality import locomo
    from localmem.embedders.resolve import resolve_embedder

    data = json.loads(Path(locomo.DEFAULT_DATA).read_text())
    texts = [q["question"] for sample in data for q in sample["qa"]][:queries]
    embedder = resolve_embedder("auto")
    delta = TreeModel.packaged().query_delta
    embedder.embed_with_tokens(texts[:1])  # load the model before timing
    started = time.perf_counter()
    embedder.embed_query_tokens(texts[:1], delta)
    first = (time.perf_counter() - started) * 1000
    plain, tuned = [], []
    for index, text in enumerate(texts):
        for label in (("plain", "tuned") if index % 2 == 0 else ("tuned", "plain")):
            started = time.perf_counter()
            embedder.embed_with_tokens([text])
            if label == "tuned":
                embedder.embed_query_tokens([text], delta)
            (tuned if label == "tuned" else plain).append((time.perf_counter() - started) * 1000)
    return {"runtime": type(embedder).__name__, "first_ms": first, "queries": len(texts),
            "plain_ms": statistics.median(plain), "tuned_ms": statistics.median(tuned)}


def measure_locomo(rounds: int, say: Any) -> dict[str, Any]:
    """Storage per memory and embed+store time of the LoCoMo turns, token evidence on and off."""
    from benchmarks.quality import locomo
    from localmem.embedders.resolve import resolve_embedder

    data = json.loads(Path(locomo.DEFAULT_DATA).read_text())
    embedder = resolve_embedder("auto")
    items = [locomo.memory_item(t, i) for i, sample in enumerate(data) for t in locomo.turns_of(sample)]
    items = items[:1024]
    embedder.embed([items[0]["content"]])  # load the model before timing
    times: dict[str, list[float]] = {"on": [], "off": []}
    facts: dict[str, Any] = {"model": embedder.name, "memories": len(items)}
    for round_ in range(rounds):
        for label in (("on", "off") if round_ % 2 == 0 else ("off", "on")):
            config = Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}).with_changes(token_evidence=label == "on")
            store = MemoryStore(":memory:", embedder=embedder, config=config)
            started = time.perf_counter()
            store.store_many(items, batch_size=128)
            times[label].append(time.perf_counter() - started)
            if label == "on":
                count, tokens, size = store.conn.execute(
                    "SELECT count(*), sum(tokens), sum(length(codes)) FROM token_codes").fetchone()
                facts.update(coded=count, tokens_per_memory=tokens / count, bytes_per_memory=size / count)
                facts["embedding_bytes"] = store.conn.execute(
                    "SELECT avg(length(embedding)) FROM memory_embeddings").fetchone()[0]
            store.close()
        say(f"  ingest round {round_ + 1}: on {times['on'][-1]:.1f} s, off {times['off'][-1]:.1f} s")
    facts["on_s"] = statistics.median(times["on"])
    facts["off_s"] = statistics.median(times["off"])
    return facts


def render(recall: dict[str, Any], ingest: dict[str, Any], command: str, seconds: float) -> str:
    lines = ["## Token-level evidence: what it costs", "",
             f"Command: `{command}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {seconds:.0f} s in all; "
             f"2 cores, shared.", "",
             f"Recall at 100k (scale.py's store and workload, synthetic token codes: "
             f"{recall['codes'][1] / recall['codes'][0]:.1f} per memory, {TOKENS_PER_WORD} per word; "
             f"median {recall['scored']:.0f} candidates rescored per recall). Each query asked with token "
             f"evidence on and off in turn; floor = the numpy float32 scan of the same vectors, "
             f"{recall['floor_ms']:.1f} ms.", "",
             "The learned columns add the learned-rank stage (recall/learned_rank.py) to token evidence.", "",
             "| mode | p50 on ms | p50 off ms | on ÷ off | p50 on ÷ floor | p95 on ÷ floor | p95 off ÷ floor "
             "| p50 learned ms | learned ÷ on | p50 learned ÷ floor | p95 learned ÷ floor |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    floor = recall["floor_ms"]
    for mode, by in recall["times"].items():
        on, off = statistics.median(by["on"]), statistics.median(by["off"])
        with_model = statistics.median(by["learned"])
        lines.append(f"| {mode} | {on:.1f} | {off:.1f} | {on / off:.2f} | {on / floor:.2f}× | "
                     f"{scale.pct(by['on'], 0.95) / floor:.2f}× | {scale.pct(by['off'], 0.95) / floor:.2f}× | "
                     f"{with_model:.1f} | {with_model / on:.2f} | {with_model / floor:.2f}× | "
                     f"{scale.pct(by['learned'], 0.95) / floor:.2f}× |")
    hybrid = recall["hybrid"]
    without, with_model = statistics.median(hybrid["without"]), statistics.median(hybrid["learned"])
    lines += ["", f"`recall_v1` (hybrid, k=10, no filters) on the {len(hybrid['learned'])} plain queries, "
                  "token evidence on, the learned stage off and on in turn:", "",
              "| p50 without ms | p50 learned ms | learned ÷ without | p95 without ms | p95 learned ms |",
              "|---:|---:|---:|---:|---:|",
              f"| {without:.1f} | {with_model:.1f} | {with_model / without:.2f} | "
              f"{scale.pct(hybrid['without'], 0.95):.1f} | {scale.pct(hybrid['learned'], 0.95):.1f} |"]
    dated = recall["dated"]
    plain_ms, dated_ms = statistics.median(dated["plain"]), statistics.median(dated["dated"])
    lines += ["", f"The same {len(dated['dated'])} plain queries with a date of the store named in their "
                  "text (\"... on 14 March 2025\"), the learned stage on, asked in turn with and without "
                  f"it: the model reads the date, and that day's memories nearest the query join the "
                  f"candidates (median {recall['dated_added']:.0f} added):", "",
              "| p50 plain ms | p50 dated ms | dated ÷ plain | p50 dated ÷ floor | p95 dated ÷ floor |",
              "|---:|---:|---:|---:|---:|",
              f"| {plain_ms:.1f} | {dated_ms:.1f} | {dated_ms / plain_ms:.2f} | {dated_ms / floor:.2f}× | "
              f"{scale.pct(dated['dated'], 0.95) / floor:.2f}× |"]
    encoding = ingest["query"]
    lines += ["", f"Reading the packaged learned-rank model (trees and query delta): "
                  f"{recall['model_read_ms']:.1f} ms (median of 5), once per process.", "",
              f"Embedding a query with the real model ({encoding['runtime']}, {encoding['queries']} LoCoMo "
              f"questions, alternating; not in the 100k figures above, whose stand-in embedder has the "
              f"vectors ready): the plain pass {encoding['plain_ms']:.1f} ms p50, with the query delta's "
              f"second pass for the tuned tokens {encoding['tuned_ms']:.1f} ms "
              f"({encoding['tuned_ms'] / encoding['plain_ms']:.2f}×); the first tuned call, which makes "
              f"the tuned copy of the model, {encoding['first_ms']:.0f} ms, once per process."]
    lines += ["", f"Storage and ingest: {ingest['memories']} LoCoMo dev turns embedded by `{ingest['model']}` "
                  f"and stored with `store_many`, token evidence on and off alternating (median of the rounds).", "",
              "| measure | value |", "|---|---:|",
              f"| token codes per memory | {ingest['tokens_per_memory']:.1f} tokens, "
              f"{ingest['bytes_per_memory']:.0f} bytes (48 per token) |",
              f"| the pooled float32 vector, for comparison | {ingest['embedding_bytes']:.0f} bytes |",
              f"| embed + store, token evidence on | {ingest['on_s']:.2f} s "
              f"({ingest['memories'] / ingest['on_s']:.0f}/s) |",
              f"| embed + store, token evidence off | {ingest['off_s']:.2f} s "
              f"({ingest['memories'] / ingest['off_s']:.0f}/s) |",
              f"| on ÷ off | {ingest['on_s'] / ingest['off_s']:.3f} |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="ingest rounds of each setting")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    say = lambda text: print(text, flush=True)  # noqa: E731
    started = time.perf_counter()
    recall = measure_recall(100_000, args.queries, say)
    ingest = measure_locomo(args.rounds, say)
    ingest["query"] = measure_query_encoding(args.queries)
    command = "python benchmarks/speed/token_evidence.py " + " ".join(argv if argv is not None else sys.argv[1:])
    body = render(recall, ingest, command.strip(), time.perf_counter() - started)
    print(body)
    if args.write:
        write_section("token-evidence", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
