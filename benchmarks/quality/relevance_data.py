"""The two dev sets as relevance prompts: LoCoMo (people talking) and LongMemEval dev
(a person and an assistant), each stored the way localmem stores that shape.

- LoCoMo: benchmarks/locomo.py's store (one memory per turn, scoped by ``conv:<n>``).
- LongMemEval: each instance is its own user's history; every turn is stored as the
  Claude Code capture hook stores a message (localmem/hooks/capture.py): verbatim, split
  into parts of at most 2,000 characters, ``metadata.role`` user/assistant, threaded by
  ``metadata.session``, tagged ``session:<id>``, ``source:claude-code`` and a project tag
  ``project:lme-<question_id>`` that scopes the instance (one store holds them all, as one
  user's projects). The evidence labels (``has_answer``) are kept outside the store.

Instances are taken in a fixed order: the 6 abstention (``_abs``) instances, then the others
by the sha256 of their ``question_id``; ``--instances N`` takes the first N of that order, and
``--sessions K`` keeps K of each instance's ~48 sessions: every answer session, then others by
the sha256 of instance and session id (embedding every session of many instances takes hours on a
shared 2-core machine).

    python benchmarks/quality/relevance_data.py --warm 32 --sessions 16   # fill the embedding cache
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from localmem import Config, MemoryStore  # noqa: E402
from localmem.hooks.capture import CAPTURED_IMPORTANCE, SOURCE_TAG, split_parts  # noqa: E402
from benchmarks.quality import locomo, longmemeval  # noqa: E402  (build_store, cached_embedder; lme_time, asked_at)


def _shared(name: str) -> Path:
    """A dev data file beside the main checkout, or beside the folder of worktrees."""
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "data" / name
        if path.exists():
            return path
    return ROOT.parent / "shared" / "data" / name


LOCOMO_DATA = _shared("locomo-dev.json")
LME_DATA = _shared("lme-dev.json")
_NAMESPACE = uuid.UUID("6b1f3c52-1d0e-4a7e-9a43-7d1c8e0f5a21")


def lme_order(instances: list[dict]) -> list[dict]:
    """The abstention instances first, then the rest by the sha256 of their id."""
    def key(instance: dict) -> tuple[bool, str]:
        qid = instance["question_id"]
        return (not qid.endswith("_abs"), hashlib.sha256(qid.encode()).hexdigest())
    return sorted(instances, key=key)


def lme_instances(path: Path = LME_DATA, count: int = 0) -> list[dict]:
    ordered = lme_order(json.loads(Path(path).read_text())["instances"])
    return ordered[:count] if count else ordered


def kept_sessions(instance: dict, sessions: int) -> set[int]:
    """The positions of the haystack sessions kept: all (``sessions`` 0), else every answer
    session and, up to ``sessions`` in all, the others first by sha256 of id and session id."""
    ids = instance["haystack_session_ids"]
    if not sessions or sessions >= len(ids):
        return set(range(len(ids)))
    answers = set(instance.get("answer_session_ids") or [])
    kept = {i for i, s in enumerate(ids) if s in answers}
    others = sorted((i for i in range(len(ids)) if i not in kept),
                    key=lambda i: hashlib.sha256(f"{instance['question_id']}/{ids[i]}".encode()).hexdigest())
    return kept | set(others[:max(0, sessions - len(kept))])


def lme_items(instance: dict, sessions: int = 0) -> tuple[list[dict[str, Any]], set[str]]:
    """The instance's memories (capture's shape) and the ids of its evidence parts; ``sessions``:
    keep only that many of its sessions (kept_sessions), in their order."""
    qid = instance["question_id"]
    project = f"lme-{qid}"
    items, gold = [], set()
    kept = kept_sessions(instance, sessions)
    for position, (session_id, date, turns) in enumerate(zip(instance["haystack_session_ids"], instance["haystack_dates"],
                                       instance["haystack_sessions"])):
        if position not in kept:
            continue
        start = longmemeval.lme_time(date)
        for number, turn in enumerate(turns):
            parts = split_parts(turn["content"])
            for index, part in enumerate(parts):
                memory_id = str(uuid.uuid5(_NAMESPACE, f"{qid}/{position}/{session_id}/{number}/{index}"))
                metadata: dict[str, Any] = {"session": session_id, "role": turn["role"],
                                            "source": "claude-code-hook", "project": project}
                if len(parts) > 1:
                    metadata.update(part=index + 1, parts=len(parts))
                items.append({"id": memory_id, "content": part,
                              "tags": [f"session:{session_id}", SOURCE_TAG, f"project:{project}"],
                              "metadata": metadata, "importance": CAPTURED_IMPORTANCE,
                              "timestamp": (start + timedelta(seconds=number)).isoformat()})
                if turn.get("has_answer"):
                    gold.add(memory_id)
    return items, gold


def lme_questions(store: MemoryStore, instances: list[dict], progress: bool = False, sessions: int = 0) -> list[dict]:
    """Store every instance into ``store``; one question per instance: ``question``, ``scope``
    (its project tag), ``gold`` (evidence memory ids; empty for ``_abs``), ``abstain``, ``now``
    (longmemeval.asked_at: the question's date, or its last turn's time when that is later, so
    that no stored turn is hidden as not yet valid)."""
    questions = []
    for number, instance in enumerate(instances):
        started = time.perf_counter()
        items, gold = lme_items(instance, sessions)
        store.store_many(items, batch_size=64)
        if progress:
            print(f"  instance {number + 1}/{len(instances)} {instance['question_id']}: "
                  f"{len(items)} memories in {time.perf_counter() - started:.0f} s", flush=True)
        questions.append({"question": instance["question"], "scope": f"project:lme-{instance['question_id']}",
                          "gold": gold, "abstain": instance["question_id"].endswith("_abs"),
                          "type": instance["question_type"], "id": instance["question_id"],
                          "now": longmemeval.asked_at(instance).isoformat()})
    return questions


def locomo_questions(store: MemoryStore, data: list[dict]) -> list[dict]:
    """LoCoMo's category 1-4 questions in the same form (gold: evidence memory ids)."""
    questions = []
    by_dia: dict[tuple[str, str], str] = {}
    for memory_id, tags, dia in store.conn.execute(
            "SELECT id, tags, json_extract(metadata, '$.dia_id') FROM memories"):
        conv = next(t for t in json.loads(tags) if t.startswith("conv:"))
        by_dia[(conv, dia)] = memory_id
    for index, sample in enumerate(data):
        known = {t["dia_id"] for t in locomo.turns_of(sample)}
        for q in locomo.questions_of(sample, known):
            scope = f"conv:{index}"
            questions.append({"question": q["question"], "scope": scope, "abstain": False,
                              "gold": {by_dia[(scope, d)] for d in q["evidence"]},
                              "type": locomo.CATEGORIES[q["category"]], "id": f"{sample['sample_id']}",
                              "now": None})
    return questions


def build(name: str, embedder: Any, config: Config, *, lme_count: int = 0, lme_sessions: int = 0,
          progress: bool = False) -> tuple[MemoryStore, list[dict]]:
    """One set's store (in memory) and its questions: ``locomo``, or ``lme`` (the first
    ``lme_count`` instances of lme_order, 0: all; ``lme_sessions`` of each one's sessions, 0: all)."""
    if name == "locomo":
        data = json.loads(LOCOMO_DATA.read_text())
        store, _ = locomo.build_store(data, embedder, ":memory:", config)
        return store, locomo_questions(store, data)
    store = MemoryStore(":memory:", embedder=embedder, config=config)
    return store, lme_questions(store, lme_instances(count=lme_count), progress, lme_sessions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=32, help="embed the first N LME instances (and LoCoMo)")
    parser.add_argument("--sessions", type=int, default=16, help="of each instance's sessions (kept_sessions; 0: all)")
    parser.add_argument("--skip", type=int, default=0, help="start at the instance after the first N")
    args = parser.parse_args(argv)
    embedder = locomo.cached_embedder("auto")
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    started = time.perf_counter()
    if not args.skip:
        data = json.loads(LOCOMO_DATA.read_text())
        locomo.build_store(data, embedder, ":memory:", config)[0].close()
        print(f"LoCoMo embedded in {time.perf_counter() - started:.0f} s", flush=True)
    with MemoryStore(":memory:", embedder=embedder, config=config) as store:
        lme_questions(store, lme_instances(count=args.warm)[args.skip:], progress=True, sessions=args.sessions)
    print(f"done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
