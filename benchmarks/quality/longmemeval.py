"""Retrieval quality on LongMemEval (a person's chats with an assistant): localmem against BM25.

Each instance is its own store: one user's history of about 48 sessions, each
turn stored as the hooks' capture stores it (verbatim, ``metadata.role``,
threaded by session, long turns split into parts of at most 2,000 characters),
the session's date as the turn's time; capture's importance (0.4) and its source and project tags
are left out (the same for every memory, so they should not change the order; not measured). The
question is asked with its
``question_date`` as "now" (or the last stored turn's time when that is later: ``asked_at``).
Turn-level R@k counts the evidence turns
(``has_answer``) among the first k distinct turns (the parts of one turn count
once, where its best part ranks); session-level recall_any@5 / recall_all@5
ask whether any / all answer sessions are among the first 5 distinct sessions
of the ranking. Plain FTS5 BM25 over the same memories runs beside it in the
same run. Abstention questions (``_abs``: the answer was never said) have no
evidence; they are reported apart, by the answer's confidence level.

    python benchmarks/quality/longmemeval.py [--instances N] [--skip N] [--ids A,B] [--threads] [--misses] [--cold N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localmem import Config, MemoryStore  # noqa: E402
from localmem.hooks.capture import clean_text, split_parts  # noqa: E402
from benchmarks.quality.locomo import bm25_match, cached_embedder  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "lme-dev.json"
KS = (5, 10)
SESSION_K = 5
RANKED = 40  # memories asked for; parts of one turn collapse, so more than 10 turns' worth
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning")


def lme_time(text: str) -> datetime:
    """'2023/05/22 (Mon) 13:42' -> an aware UTC datetime."""
    day, _, clock = text.partition(") ")
    return datetime.strptime(f"{day.split(' (')[0]} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def subset_order(instances: list[dict]) -> list[dict]:
    """A deterministic order that no result chose: abstention questions first, then by a
    hash of the id (the order the relevance calibration orders LongMemEval in, so both share the
    embedding cache of the first instances)."""
    return sorted(instances, key=lambda i: (not i["question_id"].endswith("_abs"),
                                            hashlib.sha256(i["question_id"].encode()).hexdigest()))


def load_instances(path: str | Path, count: int | None = None, skip: int = 0,
                   ids: list[str] | None = None) -> list[dict]:
    """The file's instances in ``subset_order`` (only those of ``ids`` when given), the first
    ``skip`` left out, then ``count``."""
    instances = subset_order(json.loads(Path(path).read_text())["instances"])
    if ids is not None:
        unknown = set(ids) - {i["question_id"] for i in instances}
        if unknown:
            raise SystemExit(f"--ids: no instance {', '.join(sorted(unknown))} in {path}")
        instances = [i for i in instances if i["question_id"] in set(ids)]
    return instances[skip:None if count is None else skip + count]


def memory_items(instance: dict, threads: bool = True) -> Iterator[dict[str, Any]]:
    """Each turn as capture stores it: verbatim, role and session in metadata, the session's
    tag, parts of at most 2,000 characters; a turn's time is its session's date plus one
    second per turn, so turns keep their order as a transcript's timestamps would.
    ``threads=False`` leaves the session out of tags and metadata (no thread context)."""
    sessions = zip(instance["haystack_session_ids"], instance["haystack_dates"], instance["haystack_sessions"])
    for s_index, (session_id, date, turns) in enumerate(sessions):
        started = lme_time(date)
        for t_index, turn in enumerate(turns):
            text = clean_text(turn["content"])[0].strip()
            if not text:
                continue
            parts = split_parts(text)
            for p_index, part in enumerate(parts):
                metadata: dict[str, Any] = {"role": turn["role"], "turn": f"{s_index}:{t_index}"}
                if threads:
                    metadata["session"] = str(session_id)
                if len(parts) > 1:
                    metadata.update(part=p_index + 1, parts=len(parts))
                yield {"content": part, "tags": [f"session:{session_id}"] if threads else [], "metadata": metadata,
                       "timestamp": (started + timedelta(seconds=t_index)).isoformat()}


def evidence_of(instance: dict) -> tuple[set[str], set[str]]:
    """The evidence turns (``has_answer``) and the answer sessions."""
    turns = {f"{s}:{t}" for s, session in enumerate(instance["haystack_sessions"])
             for t, turn in enumerate(session) if turn.get("has_answer")}
    return turns, {str(s) for s in instance.get("answer_session_ids") or []}


def distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v is not None))


def metrics(ranked_turns: list[str], session_of: dict[str, str], turns: set[str],
            sessions: set[str]) -> dict[str, float]:
    """Turn-level R@k and MRR over the distinct turns of the ranking; session recall_any /
    recall_all over its first distinct sessions."""
    ranked = distinct(ranked_turns)
    out: dict[str, float] = {}
    if turns:
        out.update({f"R@{k}": len(turns & set(ranked[:k])) / len(turns) for k in KS})
        first = next((i for i, t in enumerate(ranked) if t in turns), None)
        out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    if sessions:
        top = set(distinct([session_of[t] for t in ranked])[:SESSION_K])
        out[f"any@{SESSION_K}"] = float(bool(sessions & top))
        out[f"all@{SESSION_K}"] = float(sessions <= top)
    return out


def build_store(instance: dict, embedder: Any, config: Config,
                path: str = ":memory:", threads: bool = True) -> tuple[MemoryStore, int, float]:
    """The instance's store, its memory count and the seconds its ingest took."""
    store = MemoryStore(path, embedder=embedder, config=config)
    items = list(memory_items(instance, threads))
    started = time.perf_counter()
    store.store_many(items, batch_size=128)
    elapsed = time.perf_counter() - started
    store.conn.execute("CREATE VIRTUAL TABLE temp.baseline_fts USING fts5("
                       "content, tokenize='porter unicode61 remove_diacritics 2')")
    with store.conn:
        store.conn.execute("INSERT INTO temp.baseline_fts (rowid, content) SELECT pk, content FROM memories")
    return store, len(items), elapsed


def bm25_turns(store: MemoryStore, question: str, k: int = RANKED) -> list[str]:
    """Plain FTS5 bm25 over content, porter stemming, OR of non-stopword keywords."""
    match = bm25_match(question)
    if match is None:
        return []
    rows = store.conn.execute(
        "SELECT json_extract(m.metadata, '$.turn') FROM temp.baseline_fts AS f "
        "JOIN memories AS m ON m.pk = f.rowid WHERE baseline_fts MATCH ? "
        "ORDER BY bm25(baseline_fts) LIMIT ?", (match, k))
    return [r[0] for r in rows]


def asked_at(instance: dict) -> datetime:
    """When the question is asked: its ``question_date``, or the last stored turn's time when
    that is later. In 13 of the 80 dev instances sessions of the question's own day carry a later
    hour than the question (8 hold evidence there); asked at that hour, recall would rightly
    treat them as not yet valid and hide them, which never happens to what capture stored
    before a question. BM25 reads no time, so it never hid them."""
    last = max(lme_time(date) + timedelta(seconds=len(turns))
               for date, turns in zip(instance["haystack_dates"], instance["haystack_sessions"]))
    return max(lme_time(instance["question_date"]), last)


def localmem_answer(store: MemoryStore, instance: dict, **params: Any) -> tuple[list[str], dict]:
    response = store.recall(instance["question"], limit=RANKED, adaptive_floor=False,
                            now=asked_at(instance).isoformat(), **params)
    return [r["memory"]["metadata"].get("turn") for r in response["results"]], response


def session_map(instance: dict) -> dict[str, str]:
    return {f"{s}:{t}": str(sid) for s, (sid, session) in
            enumerate(zip(instance["haystack_session_ids"], instance["haystack_sessions"]))
            for t in range(len(session))}


# The rows --threads adds: the store without sessions (no thread context at all), and thread
# context left out of the keyword score only (the trees still read the thread features).
NO_THREADS = "localmem, no threads (no session in tags or metadata)"
NO_THREAD_KEYWORDS = "localmem, keyword score of the content only (no thread neighbours)"
CONTENT_ONLY = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def run(instances: list[dict], embedder: Any, config: Config, variants: dict[str, Config] | None = None,
        log=print, threads_ablation: bool = False) -> dict[str, Any]:
    """Every instance: its store, BM25 and localmem (and each variant configuration) per
    question; ingest and warm query timings. ``threads_ablation`` adds the NO_THREADS and
    NO_THREAD_KEYWORDS rows."""
    variants = {"localmem": config, **(variants or {})}
    if threads_ablation:
        variants[NO_THREAD_KEYWORDS] = config.with_changes(keyword_column_weights=CONTENT_ONLY)
    rows: dict[str, list] = {"bm25": [], **{name: [] for name in variants}}
    if threads_ablation:
        rows[NO_THREADS] = []
    abstentions: dict[str, list] = {name: [] for name in variants}
    ingest_seconds = ingest_memories = 0.0
    query_ms: dict[str, list[float]] = {name: [] for name in variants}
    misses: list[str] = []
    for number, instance in enumerate(instances):
        store, count, seconds = build_store(instance, embedder, config)
        ingest_seconds += seconds
        ingest_memories += count
        with store:
            turns, sessions = evidence_of(instance)
            of = session_map(instance)
            kind = instance["question_type"]
            abstain = instance["question_id"].endswith("_abs")
            if not abstain:
                bm25_ranked = bm25_turns(store, instance["question"])
                rows["bm25"].append((kind, metrics(bm25_ranked, of, turns, sessions)))
            for name, variant in variants.items():
                store.config = variant
                store.__dict__.pop("learned_model", None)  # read again: a variant may name another model file
                localmem_answer(store, instance)  # warm: the timed call finds models and caches loaded
                started = time.perf_counter()
                ranked, response = localmem_answer(store, instance)
                query_ms[name].append((time.perf_counter() - started) * 1000)
                if abstain:
                    abstentions[name].append((response.get("confidence") or {}).get("level"))
                else:
                    rows[name].append((kind, metrics(ranked, of, turns, sessions)))
                    if name == "localmem":
                        misses.extend(bm25_only_misses(instance, bm25_ranked, response, turns))
        if threads_ablation and not abstain:
            flat, _, _ = build_store(instance, embedder, config, threads=False)
            with flat:
                rows[NO_THREADS].append((kind, metrics(localmem_answer(flat, instance)[0], of, turns, sessions)))
        log(f"{number + 1}/{len(instances)} {instance['question_id']} {kind}: {count} memories, "
            f"ingest {seconds:.1f} s")
    return {"rows": rows, "abstentions": abstentions, "ingest_seconds": ingest_seconds,
            "ingest_memories": ingest_memories, "query_ms": query_ms, "misses": misses}


def bm25_only_misses(instance: dict, bm25_ranked: list[str], response: dict, turns: set[str]) -> list[str]:
    """Lines on each evidence turn BM25 ranks in its top 10 and localmem does not: who said it,
    how long it is, where localmem ranks it and with which score components, against its 10th."""
    results = response["results"]
    ranked = distinct([r["memory"]["metadata"].get("turn") for r in results])
    missed = [t for t in distinct(bm25_ranked)[:10] if t in turns and t not in ranked[:10]]
    if not missed:
        return []
    tenth = next((r for r in results if r["memory"]["metadata"].get("turn") == ranked[9]), None) \
        if len(ranked) >= 10 else None
    lines = [f"{instance['question_id']} ({instance['question_type']}): {instance['question'][:160]!r}"]
    for turn in missed:
        s_index, t_index = map(int, turn.split(":"))
        said = instance["haystack_sessions"][s_index][t_index]
        best = next((r for r in results if r["memory"]["metadata"].get("turn") == turn), None)
        where = f"localmem rank {ranked.index(turn) + 1}" if turn in ranked else f"not in localmem's first {RANKED}"
        components = _components(best) if best else ""
        lines.append(f"  {turn} {said['role']}, {len(said['content'])} chars, BM25 rank "
                     f"{distinct(bm25_ranked).index(turn) + 1}, {where} {components}")
    if tenth is not None:
        lines.append(f"  localmem's 10th: {tenth['memory']['metadata'].get('turn')} "
                     f"{tenth['memory']['metadata'].get('role')} {_components(tenth)}")
    return lines


def _components(result: dict) -> str:
    parts = {k: round(v, 3) for k, v in result["score_components"].items() if isinstance(v, float) and v}
    return f"final {result['final_score']:.3f} {parts}"


def summary(rows: list) -> dict[str, dict[str, float]]:
    """Mean of each metric overall and by question type (each over the questions that have it)."""
    groups: dict[str, list] = {"overall": [m for _, m in rows]}
    for kind, m in rows:
        groups.setdefault(kind, []).append(m)
    out = {}
    for name, ms in groups.items():
        keys = sorted({k for m in ms for k in m})
        out[name] = {k: statistics.fmean([m[k] for m in ms if k in m]) for k in keys} | {"n": len(ms)}
    return out


COLUMNS = ("R@5", "R@10", "MRR", f"any@{SESSION_K}", f"all@{SESSION_K}")


def report(result: dict[str, Any]) -> list[str]:
    lines = ["| retriever | question type | n | turn R@5 | turn R@10 | MRR | session any@5 | session all@5 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, rows in result["rows"].items():
        if not rows:
            continue
        s = summary(rows)
        for group in ("overall", *TYPES):
            if group in s:
                lines.append(f"| {name} | {group} | {s[group]['n']} | " + " | ".join(
                    f"{s[group][c]:.3f}" if c in s[group] else "–" for c in COLUMNS) + " |")
    base = summary(result["rows"]["bm25"])["overall"] if result["rows"]["bm25"] else None
    if base:
        lines += ["", "Against BM25 of the same run (overall):", ""]
        for name, rows in result["rows"].items():
            if name != "bm25" and rows:
                s = summary(rows)["overall"]
                lines.append(f"- {name}: turn R@10 {s['R@10'] - base['R@10']:+.3f}, "
                             f"R@5 {s['R@5'] - base['R@5']:+.3f}, MRR {s['MRR'] - base['MRR']:+.3f}")
    for name, levels in result["abstentions"].items():
        if levels:
            counts = {level: levels.count(level) for level in sorted(set(map(str, levels)))}
            lines.append(f"- abstention questions ({len(levels)}), {name}'s confidence level: {counts}")
    memories, seconds = result["ingest_memories"], result["ingest_seconds"]
    lines.append(f"- ingest: {memories:.0f} memories in {seconds:.1f} s, {memories / max(seconds, 1e-9):.0f} a second "
                 "(embeddings from the cache: this is storing, indexing and token codes, not the model)")
    for name, ms in result["query_ms"].items():
        if ms:
            lines.append(f"- {name}, warm recall per query: median {statistics.median(ms):.0f} ms, "
                         f"p90 {sorted(ms)[max(0, math.ceil(0.9 * len(ms)) - 1)]:.0f} ms")
    return lines


COLD_SCRIPT = """
import sys, time
started = time.perf_counter()
from localmem import MemoryStore
with MemoryStore(sys.argv[1], embedder="auto") as store:
    store.recall(sys.argv[2], limit=10, now=sys.argv[3])
print(time.perf_counter() - started)
"""


def cold_query_seconds(instance: dict, embedder: Any, configs: dict[str, Config], runs: int
                       ) -> dict[str, list[float]]:
    """Wall time of a fresh process opening the instance's store (a file) and answering its
    question once: imports, model load and the query; the store is built first, untimed.
    Each configuration (its model file and thread spread, the settings a fresh process reads
    from the environment) runs in turn, ``runs`` rounds, so load falls on all of them alike."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "lme.db")
        store, _, _ = build_store(instance, embedder, next(iter(configs.values())), path)
        store.close()
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(runs):
            for name, config in configs.items():
                env = {**os.environ, "LOCALMEM_TRACK_ACCESS": "0",
                       "LOCALMEM_THREAD_SPREAD": "1" if config.thread_spread else "0"}
                if config.learned_rank_model:
                    env["LOCALMEM_LEARNED_RANK_MODEL"] = config.learned_rank_model
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", COLD_SCRIPT, path, instance["question"],
                                asked_at(instance).isoformat()],
                               check=True, env=env, capture_output=True, timeout=600)
                times[name].append(time.perf_counter() - started)
        return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--instances", type=int, default=None, help="the first N instances in subset order (after --skip)")
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--ids", default=None, help="comma-separated question ids: only these instances")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--model", default=None,
                        help="a learned-rank model file to rank with (a held-out fold's), "
                             "instead of the packaged one")
    parser.add_argument("--variant", action="append", default=[],
                        help="name:KEY=VALUE[,KEY=VALUE] a configuration change run beside the default")
    parser.add_argument("--threads", action="store_true",
                        help="also run without thread context: the store without sessions, and the keyword "
                             "score of the content only")
    parser.add_argument("--misses", action="store_true",
                        help="list each evidence turn BM25 ranks in its top 10 and localmem does not, with why")
    parser.add_argument("--cold", type=int, default=0,
                        help="also time N fresh processes answering the first answerable instance's question, "
                             "each configuration in turn (the default and every --variant)")
    args = parser.parse_args(argv)
    instances = load_instances(args.data, args.instances, args.skip,
                               args.ids.split(",") if args.ids else None)
    changes = {"track_access": False}
    if args.model:
        changes["learned_rank_model"] = args.model
    config = Config.from_env(os.environ).with_changes(**changes)
    variants = {}
    for spec in args.variant:
        name, _, body = spec.partition(":")
        values = dict(part.split("=", 1) for part in body.split(",") if part)
        variants[name] = config.with_changes(**{k: json.loads(v) for k, v in values.items()})
    started = time.perf_counter()
    result = run(instances, cached_embedder(args.embedder), config, variants,
                 log=lambda line: print(line, file=sys.stderr, flush=True), threads_ablation=args.threads)
    print("\n".join(report(result)))
    if args.misses:
        print("\nEvidence turns in BM25's top 10 and not in localmem's:\n")
        print("\n".join(result["misses"]) or "none")
    if args.cold:
        first = next(i for i in instances if not i["question_id"].endswith("_abs"))
        cold = cold_query_seconds(first, cached_embedder(args.embedder), {"localmem": config, **variants}, args.cold)
        for name, times in cold.items():
            print(f"- cold, {name}: a fresh process opening one instance's store and answering once (wall, whole "
                  f"process): median {statistics.median(times):.2f} s over {len(times)} runs")
    print(f"\n{len(instances)} instances, total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
