"""What the prompt hook injects on LoCoMo dev, and what answering it costs in-process.

Store: every turn of the LoCoMo dev conversations (``../shared/data/locomo-dev.json``),
one memory per turn, each conversation tagged as its own project
(``project:conv-26`` …), embedded with the real all-MiniLM-L6-v2 (``--embedder``).

Prompts, each through ``answer_hook_with_report(store, "UserPromptSubmit", …)`` from a
working directory named after a conversation, each in a fresh session (no ledger effect):

- related: LoCoMo questions (categories 1-4, with evidence) in their own conversation's
  project: does the block hold an evidence turn?
- unrelated: benchmarks/quality/confidence_calibration.py's 40 off-topic questions, in every
  project: is nothing injected?
- wrong project: each related question asked from another conversation's project (a
  topically adjacent negative): is nothing injected?

The hook runs at floor 0 and its report gives each chosen memory's relevance; the share
at floor f counts the memories of that block at or above f (the block is filled most
relevant first, so this is the block floor f would give, up to a note skipped for size).
The relevance read is ``inject.relevance_of``: recall's calibrated ``relevance``
(docs/relevance.md); the hook's default floor is recall's, 0.74.

Timing: per prompt, the hook's answer (the project's recall, a second one over memories
tied to no project when the store has any (here none), the ledger look-up and write) beside
one plain ``recall`` of the same prompt,
interleaved, so the ratio is what the hook adds; and one capture of
tests/fixtures/claude_code/transcript.jsonl.

    HF_HUB_OFFLINE=1 python benchmarks/hooks/hook_injection.py [--per-conversation 40] [--embedder auto]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from localmem import MemoryStore  # noqa: E402
from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from benchmarks.quality import locomo  # noqa: E402
from benchmarks.quality.confidence_calibration import OFF_TOPIC  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
FLOORS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.74, 0.8, 0.9)
TRANSCRIPT = ROOT / "tests" / "fixtures" / "claude_code" / "transcript.jsonl"


def build(data: list[dict], embedder: str, per_conversation: int) -> tuple[MemoryStore, list[tuple[str, str, set[str]]]]:
    store = MemoryStore(":memory:", embedder=embedder)
    related = []
    for index, sample in enumerate(data):
        project = sample["sample_id"]
        turns = locomo.turns_of(sample)
        items = []
        for turn in turns:
            item = locomo.memory_item(turn, index)
            item["tags"] = item["tags"] + [f"project:{project}"]
            items.append(item)
        store.store_many(items)
        known = {t["dia_id"] for t in turns}
        questions = locomo.questions_of(sample, known)[:per_conversation]
        related += [(project, q["question"], q["evidence"]) for q in questions]
    return store, related


def ask(store: MemoryStore, work: Path, project: str, prompt: str, session: str) -> tuple[dict, float]:
    payload = {"session_id": session, "cwd": str(work / project), "prompt": prompt,
               "hook_event_name": "UserPromptSubmit"}
    started = time.perf_counter()
    answer = answer_hook_with_report(store, "UserPromptSubmit", payload, HookSettings(relevance_floor=0.0))
    return answer.report, time.perf_counter() - started


def injected_at(report: dict, floor: float) -> list[str]:
    relevance = report.get("relevance", {})
    return [m for m in report.get("memory_ids", []) if relevance.get(m, 0.0) >= floor]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--per-conversation", type=int, default=40)
    args = parser.parse_args()
    data = json.loads(args.data.read_text("utf-8"))
    work = Path(tempfile.mkdtemp(prefix="hook-injection-"))
    try:
        started = time.perf_counter()
        store, related = build(data, args.embedder, args.per_conversation)
        print(f"store: {store.health()['memory_count']} turns, embedder {store.embedder.name}, "
              f"built in {time.perf_counter() - started:.0f} s", flush=True)
        projects = [s["sample_id"] for s in data]
        for project in projects:
            (work / project).mkdir()
        dia = {row[0]: row[1] for row in store.conn.execute(
            "SELECT id, json_extract(metadata, '$.dia_id') FROM memories")}
        hook_times, recall_times = [], []
        related_reports, unrelated_reports, wrong_reports = [], [], []
        session = 0
        for project, question, evidence in related:
            session += 1
            report, seconds = ask(store, work, project, question, f"r{session}")
            hook_times.append(seconds)
            t0 = time.perf_counter()
            store.recall(question, tags=[f"project:{project}"], tag_match="exact", limit=24)
            recall_times.append(time.perf_counter() - t0)
            related_reports.append((report, evidence))
            other = projects[(projects.index(project) + 1) % len(projects)]
            wrong_reports.append(ask(store, work, other, question, f"w{session}")[0])
        for project in projects:
            for question in OFF_TOPIC:
                session += 1
                unrelated_reports.append(ask(store, work, project, question, f"u{session}")[0])
        print(f"\nprompts: {len(related_reports)} related, {len(unrelated_reports)} unrelated, "
              f"{len(wrong_reports)} wrong project")
        print("| floor | related: an evidence turn injected | related: anything injected | "
              "unrelated: nothing injected | wrong project: nothing injected |")
        print("|---|---|---|---|---|")
        for floor in FLOORS:
            hit = sum(1 for r, ev in related_reports if {dia.get(m) for m in injected_at(r, floor)} & ev)
            some = sum(1 for r, _ in related_reports if injected_at(r, floor))
            quiet = sum(1 for r in unrelated_reports if not injected_at(r, floor))
            quiet_wrong = sum(1 for r in wrong_reports if not injected_at(r, floor))
            n, u, w = len(related_reports), len(unrelated_reports), len(wrong_reports)
            print(f"| {floor:.2f} | {hit / n:.3f} | {some / n:.3f} | {quiet / u:.3f} | {quiet_wrong / w:.3f} |")
        ratio = [h / r for h, r in zip(hook_times, recall_times)]
        print(f"\nUserPromptSubmit answer (in-process, warm store): p50 {statistics.median(hook_times) * 1000:.1f} ms, "
              f"p95 {sorted(hook_times)[int(0.95 * len(hook_times))] * 1000:.1f} ms; one plain recall p50 "
              f"{statistics.median(recall_times) * 1000:.1f} ms; paired ratio hook/recall p50 "
              f"{statistics.median(ratio):.2f}")
        copy = work / "transcript.jsonl"
        shutil.copy(TRANSCRIPT, copy)
        t0 = time.perf_counter()
        report = answer_hook_with_report(store, "Stop", {"session_id": "capture-1", "cwd": str(work / projects[0]),
                                                         "transcript_path": str(copy)}, HookSettings()).report
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        answer_hook_with_report(store, "Stop", {"session_id": "capture-1", "cwd": str(work / projects[0]),
                                                "transcript_path": str(copy)}, HookSettings())
        again = time.perf_counter() - t0
        print(f"Stop capture of the fixture transcript ({report['lines_read']} lines, "
              f"{report['stored_messages']} turns stored): {first * 1000:.1f} ms; run again (nothing new): "
              f"{again * 1000:.1f} ms")
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
