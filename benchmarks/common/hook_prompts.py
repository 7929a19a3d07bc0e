"""The prompt hook's prompts on both dev sets, asked as it answers them: each prompt's candidates with their
relevance inputs, its keyword counts and recall's scores (benchmarks/hooks/hook_injection.py's docstring says which
prompts and stores; its ``--save`` keeps what these return)."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from localmem import MemoryStore  # noqa: E402
from localmem.hooks.capture import clean_text, split_parts  # noqa: E402
from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.content_free import NOTE_REASONS, note_skipped  # noqa: E402
from localmem.hooks.noise_rules import compile_rules  # noqa: E402
from localmem.hooks.selection import OWN_TURN  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from benchmarks.common import prompt_terms  # noqa: E402
from benchmarks.quality import locomo  # noqa: E402
from benchmarks.quality.confidence_calibration import OFF_TOPIC  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
FOLDS = 5
# All 80 (the shared embedding cache holds every turn of each since 2026-12-05); --lme takes fewer.
LME_POSITIONS = tuple(range(80))
# The hook's candidates it never injects, not saved: this session's own turns, and notes of content_free.NOTE_SHAPES
# (the hook reads their shapes only when a candidate clears its floor; a replay at a lower floor must not see them).
NEVER_ELIGIBLE = (OWN_TURN, *NOTE_REASONS.values())
RULES = compile_rules({})  # the built-in noise rules (a frozen dataclass)


def memories_of(store: MemoryStore) -> dict[str, dict[str, Any]]:
    return {row[0]: {"id": row[0], "content": row[1], "timestamp": row[2], "metadata": json.loads(row[3])}
            for row in store.conn.execute("SELECT id, content, timestamp, metadata FROM memories")}


def ask(store: MemoryStore, memories: dict, cwd: Path, prompt: str, session: str, settings: HookSettings,
        scope: set[int] | None = None) -> dict:
    """The hook's answer to ``prompt`` asked from ``cwd``, with the prompt's keyword counts in ``scope`` (pks;
    None: the whole store) for prompt_terms' variants, and recall's score of each of the scope's first 20
    (``scores``, for the cap by the second's margin)."""
    payload = {"session_id": session, "cwd": str(cwd), "prompt": prompt, "hook_event_name": "UserPromptSubmit"}
    report = answer_hook_with_report(store, "UserPromptSubmit", payload, settings).report
    candidates = [(c["id"], c["relevance"], c.get("inputs") or {}, c.get("rank")) for c in report.get("candidates", [])
                  if c["decision"] not in NEVER_ELIGIBLE and not note_skipped(memories[c["id"]]["content"], RULES)]
    return {"prompt": prompt, "candidates": candidates, "memories": {m: memories[m] for m, *_ in candidates},
            "floor": report.get("relevance_floor", 0.0), "shipped_ids": report.get("memory_ids", []),
            "shipped_tokens": report.get("tokens", 0), "terms": prompt_terms.term_stats(store.conn, prompt, scope),
            "rows": len(scope) if scope is not None else len(memories),
            **recall_scores(store.recall(prompt, tags=[f"project:{cwd.name}"], tag_match="exact", limit=20)["results"])}


def recall_scores(results: list[dict]) -> dict[str, dict[str, float]]:
    """Recall's score of each result (``scores``) and its learned, vector and keyword components (``components``)."""
    return {"scores": {r["id"]: r["score"] for r in results},
            "components": {r["id"]: {k: (r.get("score_components") or {}).get(k)
                                     for k in ("learned", "vector", "keyword")} for r in results}}


def locomo_prompts(path: Path, embedder: str, per_conversation: int, work: Path, settings: HookSettings,
                   first_turns: int = 0) -> list[dict]:
    """LoCoMo's prompts (module docstring); ``first_turns`` over 0: each conversation's first that many turns only
    (small project stores), its questions those with evidence among them."""
    data = json.loads(path.read_text("utf-8"))
    store = MemoryStore(":memory:", embedder=locomo.cached_embedder(embedder))
    asked: list[tuple[int, str, set[str]]] = []
    scopes: list[set[int]] = []  # each conversation's memories (pks): its project's scope
    for index, sample in enumerate(data):
        turns = locomo.turns_of(sample)[:first_turns or None]
        items = [locomo.memory_item(t, index) for t in turns]
        for item in items:
            item["tags"] = item["tags"] + [f"project:{sample['sample_id']}"]
        ids = store.store_many(items, batch_size=128)
        scopes.append({store.conn.execute("SELECT pk FROM memories WHERE id = ?", (m,)).fetchone()[0] for m in ids})
        known = {t["dia_id"] for t in turns}
        asked += [(index, q["question"], q["evidence"]) for q in locomo.questions_of(sample, known)[:per_conversation]]
        (work / sample["sample_id"]).mkdir()
    memories = memories_of(store)
    dia = {m: memory["metadata"].get("dia_id") for m, memory in memories.items()}
    projects = [s["sample_id"] for s in data]
    prompts = []
    for n, (index, question, evidence) in enumerate(asked):
        started = time.perf_counter()
        found = ask(store, memories, work / projects[index], question, f"r{n}", settings, scopes[index])
        hook_seconds = time.perf_counter() - started
        started = time.perf_counter()
        store.recall(question, tags=[f"project:{projects[index]}"], tag_match="exact", limit=20)
        found["seconds"] = (hook_seconds, time.perf_counter() - started)  # the hook, one plain recall
        prompts.append({**found, "set": "locomo", "fold": index, "kind": "related", "source": "question",
                        "evidence": {m for m, *_ in found["candidates"] if dia[m] in evidence}})
        other = (index + 1) % len(projects)
        found = ask(store, memories, work / projects[other], question, f"w{n}", settings, scopes[other])
        prompts.append({**found, "set": "locomo", "fold": other, "kind": "unrelated", "source": "other",
                        "evidence": set()})
    for index, project in enumerate(projects):
        for n, question in enumerate(OFF_TOPIC):
            found = ask(store, memories, work / project, question, f"u{index}-{n}", settings, scopes[index])
            prompts.append({**found, "set": "locomo", "fold": index, "kind": "unrelated", "source": "offtopic",
                            "evidence": set()})
    store.close()
    return prompts


def lme_store(instance: dict, embedder: Any) -> tuple[MemoryStore, set[str]]:
    store = MemoryStore(":memory:", embedder=embedder)
    items, marked = [], []
    for session, date in zip(instance["haystack_sessions"], instance["haystack_dates"]):
        when = time.strftime("%Y-%m-%dT%H:%M:00Z", time.strptime(date[:10] + date[-6:], "%Y/%m/%d %H:%M"))
        for turn in session:
            for part in stored_parts(turn):
                items.append({"content": part, "timestamp": when, "tags": ["project:lme"],
                              "metadata": {"role": turn["role"]}})
                marked.append(bool(turn.get("has_answer")))
    ids = store.store_many(items, batch_size=128)
    return store, {m for m, answer in zip(ids, marked) if answer}


def stored_parts(turn: dict) -> list[str]:
    """A haystack turn's memories: its text as capture cleans and splits a turn."""
    text = clean_text(turn["content"])[0].strip()
    return split_parts(text) if text else []


def held_evidence(instance: dict, memories: dict) -> set[str]:
    """The memories (of another instance's store) whose text is one of ``instance``'s evidence turns: LongMemEval's
    haystacks share sessions, so a store may hold another instance's evidence (instance 47 holds one of 48's)."""
    texts = {part for session in instance["haystack_sessions"] for turn in session if turn.get("has_answer")
             for part in stored_parts(turn)}
    return {m for m, memory in memories.items() if memory["content"] in texts}


def lme_instances(path: Path, positions: list[int]) -> list[dict]:
    """The instances at ``positions`` of the set ordered by (answerable, sha256 of the question id)."""
    instances = json.loads(path.read_text("utf-8"))["instances"]
    instances.sort(key=lambda i: (not i["question_id"].endswith("_abs"),
                                  hashlib.sha256(i["question_id"].encode()).hexdigest()))
    return [instances[p] for p in positions if 0 <= p < len(instances)]


def ask_instance(store: Any, memories: Any, work: Path, chosen: list[dict[str, Any]], index: int,
                 evidence: set[str], settings: HookSettings, *, ask_question: bool) -> list[dict[str, Any]]:
    """One LongMemEval instance's prompts as the hook answers them: its own question (related, or unrelated
    when it has no answer; only with ``ask_question``), the next instance's question and off-topic ones."""
    instance, fold, prompts = chosen[index], index % FOLDS, []
    unanswerable = instance["question_id"].endswith("_abs")
    if ask_question:
        found = ask(store, memories, work, instance["question"], f"q{index}", settings)
        prompts.append({**found, "set": "lme", "fold": fold, "kind": "unrelated" if unanswerable else "related",
                        "source": "abstain" if unanswerable else "question",
                        "evidence": set() if unanswerable else evidence & set(found["memories"])})
    following = chosen[(index + 1) % len(chosen)]
    found = ask(store, memories, work, following["question"], f"w{index}", settings)
    # Another instance's question is unrelated unless this store holds one of its evidence turns (then it is
    # related, with those as its evidence), whatever its instance.
    held = set() if following["question_id"].endswith("_abs") else held_evidence(following, memories)
    prompts.append({**found, "set": "lme", "fold": fold, "kind": "related" if held else "unrelated",
                    "source": "other", "evidence": held & set(found["memories"])})
    for n, question in enumerate(OFF_TOPIC[index % 4::4]):
        found = ask(store, memories, work, question, f"u{index}-{n}", settings)
        prompts.append({**found, "set": "lme", "fold": fold, "kind": "unrelated", "source": "offtopic",
                        "evidence": set()})
    return prompts


def lme_prompts(path: Path, embedder: str, positions: list[int], work: Path, settings: HookSettings) -> list[dict]:
    chosen = lme_instances(path, positions)
    cached = locomo.cached_embedder(embedder)
    (work / "lme").mkdir()
    prompts = []
    for index, instance in enumerate(chosen):
        started = time.perf_counter()
        store, evidence = lme_store(instance, cached)
        memories = memories_of(store)
        prompts += ask_instance(store, memories, work / "lme", chosen, index, evidence, settings, ask_question=True)
        store.close()
        print(f"  lme {index + 1}/{len(chosen)} {instance['question_id']}: {len(memories)} turns, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    return prompts
