"""What the prompt hook does with prompts that have nothing to look up, on stores of both dev sets (issue 40).

The probe set is tests/content_free_prompts.py: prompts a person types to a coding assistant, written before the
hook's rule, ``CONTENT_FREE`` (assent, thanks, a menu choice, "go on", and some the rule does not read as such:
"fix it", "why?") and ``CONTENT`` (ordinary prompts, some opening like an assent: "no, use postgres instead").
Each is asked through ``answer_hook_with_report(store, "UserPromptSubmit", ...)`` in a fresh session, from the
folder of each project of:

- the LoCoMo dev store as hook_injection.py builds it (every turn a memory, each conversation its own project);
- LongMemEval dev instances as hook_injection.py builds them (``--lme`` positions in its order; each its own store);
- the store of tests/test_hook_inject_cases.py (project ``orders``: decisions, preferences, a traceback, a code
  dump, "ok, thanks", "Sure, go ahead.").

Reported: the share of content-free prompts that inject nothing (and which did inject, with what), the reasons the
hook gave, and the notes each content prompt got. ``--save FILE`` keeps every answer's injected notes;
``--compare FILE`` (a save from another tree, e.g. main's) says for how many content prompts the injected notes
are the same, and lists those that differ.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/content_free.py [--lme 6,7,8,9,10] [--save FILE]
        [--compare FILE] [--embedder auto]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from localmem import MemoryStore  # noqa: E402
from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from benchmarks.common.hook_prompts import DATA, lme_instances, lme_store  # noqa: E402
from benchmarks.quality import locomo  # noqa: E402
from tests.content_free_prompts import CONTENT, CONTENT_FREE  # noqa: E402

# The notes of tests/test_hook_inject_cases.py's store (project orders), kept here so this script does not import a
# test module: two decisions (the first superseded), two preferences, a traceback, a code dump and five others.
ORDERS_SUPERSEDED = "Decision: the orders service stores its data in MongoDB."
ORDERS_NOTES = (
    ("Decision: the orders service moves from MongoDB to PostgreSQL 16; all new tables go there.", "Decision"),
    ("Preference: never use unittest, always pytest (with plain asserts and fixtures) for tests in this repo.",
     "Preference"),
    ("Preference: format and lint Python with ruff (ruff format, ruff check --fix); no black, no isort.", "Preference"),
    ('Traceback (most recent call last):\n  File "/srv/orders/app/db.py", line 41, in connect\n    pool = await '
     "asyncpg.create_pool(dsn=settings.database_url, min_size=2)\n  File \"/usr/lib/python3.12/site-packages/asyncpg/"
     "pool.py\", line 403, in _async__init__\n    await self._initialize()\nConnectionRefusedError: [Errno 111] "
     "Connect call failed ('127.0.0.1', 5432)", None),
    ("Here is the current db module:\n```python\nimport asyncpg\nfrom .settings import settings\n\nasync def connect()"
     ":\n    return await asyncpg.create_pool(dsn=settings.database_url, min_size=2, max_size=10)\n\nasync def "
     "fetch_order(pool, order_id):\n    async with pool.acquire() as conn:\n        return await conn.fetchrow("
     "\"SELECT * FROM orders WHERE id = $1\", order_id)\n```", None),
    ("The CI pipeline runs on GitHub Actions with a matrix of Python 3.11 and 3.12.", None),
    ("Releases are tagged vX.Y.Z and published to the internal package index on Fridays.", None),
    ("The orders API exposes /orders, /orders/{id} and /orders/{id}/refunds.", None),
    ("ok, thanks", None),
    ("Sure, go ahead.", None),
)
DEFAULT_LME = "6,7,8,9,10"  # answerable instances, the first five after the six _abs ones in hook_injection's order


def orders_store(embedder) -> MemoryStore:
    store = MemoryStore(":memory:", embedder=embedder)
    tags = ["project:orders"]
    old = store.store(ORDERS_SUPERSEDED, tags=tags, type="Decision", timestamp="2026-10-01T10:00:00Z")
    for index, (text, kind) in enumerate(ORDERS_NOTES):
        if index == 0:
            store.supersede(old, text, tags=tags, type=kind)
        elif kind:
            store.store(text, tags=tags, type=kind)
        else:
            store.store(text, tags=tags)
    return store


def locomo_store(path: Path, embedder, work: Path) -> tuple[MemoryStore, list[str]]:
    data = json.loads(path.read_text("utf-8"))
    store = MemoryStore(":memory:", embedder=embedder)
    projects = []
    for index, sample in enumerate(data):
        items = [locomo.memory_item(t, index) for t in locomo.turns_of(sample)]
        for item in items:
            item["tags"] = item["tags"] + [f"project:{sample['sample_id']}"]
        store.store_many(items, batch_size=128)
        (work / sample["sample_id"]).mkdir()
        projects.append(sample["sample_id"])
    return store, projects


def each_probe_store(embedder, locomo_path: Path, lme_path: Path, positions: str, work: Path):
    """``(store, name, cwd)`` for the orders store, each LoCoMo conversation's project and each LongMemEval
    instance at ``positions``, a folder under ``work`` as each one's checkout; each store closed after its turn."""
    store = orders_store(embedder)
    (work / "orders" / ".git").mkdir(parents=True)
    yield store, "orders", work / "orders"
    store.close()
    store, projects = locomo_store(locomo_path, embedder, work)
    for project in projects:
        yield store, f"locomo {project}", work / project
    store.close()
    (work / "lme").mkdir()
    for instance in lme_instances(lme_path, [int(p) for p in positions.split(",") if p.strip()]):
        store, _ = lme_store(instance, embedder)
        yield store, f"lme {instance['question_id']}", work / "lme"
        store.close()


def ask_all(store: MemoryStore, name: str, cwd: Path, settings: HookSettings, answers: dict) -> None:
    """Every probe prompt asked of ``store`` from ``cwd``, each in its own session."""
    contents = dict(store.conn.execute("SELECT id, content FROM memories"))
    for kind, prompts in (("content_free", CONTENT_FREE), ("content", CONTENT)):
        for n, prompt in enumerate(prompts):
            payload = {"session_id": f"{kind}-{n}", "cwd": str(cwd), "prompt": prompt,
                       "hook_event_name": "UserPromptSubmit"}
            report = answer_hook_with_report(store, "UserPromptSubmit", payload, settings).report
            ids = report.get("memory_ids", [])
            answers[f"{name}\t{kind}\t{prompt}"] = {
                "ids": ids, "notes": [contents[m] for m in ids], "reason": report.get("reason", ""),
                "recalled": "candidates" in report, "previews": [" ".join(contents[m].split())[:70] for m in ids]}


def summary(answers: dict, compare: dict | None) -> None:
    stores = sorted({key.split("\t")[0] for key in answers})
    print("| store | content-free prompts that inject nothing (n) | content-free prompts not recalled at all | "
          "content prompts that inject (n) |\n|---|---|---|---|")
    rows = {}
    for store in [*stores, "all"]:
        picked = {k: v for k, v in answers.items() if store == "all" or k.split("\t")[0] == store}
        free = [v for k, v in picked.items() if k.split("\t")[1] == "content_free"]
        content = [v for k, v in picked.items() if k.split("\t")[1] == "content"]
        rows[store] = sum(not v["ids"] for v in free) / max(1, len(free))
        unasked = sum(not v["recalled"] for v in free) / max(1, len(free))
        print(f"| {store} | {rows[store]:.3f} ({len(free)}) | {unasked:.3f}"
              f" | {sum(bool(v['ids']) for v in content) / max(1, len(content)):.3f} ({len(content)}) |")
    reasons = collections.Counter(v["reason"] for k, v in answers.items() if k.split("\t")[1] == "content_free")
    print("\nthe hook's reasons for content-free prompts: " + "; ".join(f"{r or 'injected'}: {n}"
                                                                       for r, n in reasons.most_common()))
    print("\ncontent-free prompts that injected:")
    for key, value in answers.items():
        if key.split("\t")[1] == "content_free" and value["ids"]:
            store, _, prompt = key.split("\t")
            print(f"  {store}: {prompt!r} -> {value['previews']}")
    print("\ncontent prompts that injected (orders):")
    for key, value in answers.items():
        store, kind, prompt = key.split("\t")
        if kind == "content" and store == "orders" and value["ids"]:
            print(f"  {prompt!r} -> {value['previews']}")
    if compare is None:
        return
    same = changed = 0
    print("\ncontent prompts whose notes differ from the compared run:")
    for key, value in answers.items():
        if key.split("\t")[1] != "content" or key not in compare:
            continue
        if value["notes"] == compare[key]["notes"]:  # by text: a store built anew gives its memories new ids
            same += 1
        else:
            changed += 1
            store, _, prompt = key.split("\t")
            print(f"  {store}: {prompt!r}: {compare[key]['previews']} -> {value['previews']}")
    free_before = [v for k, v in compare.items() if k.split("\t")[1] == "content_free"]
    print(f"\ncontent prompts with the same notes as the compared run: {same} of {same + changed}; content-free "
          f"prompts that inject nothing there: {sum(not v['ids'] for v in free_before) / max(1, len(free_before)):.3f}"
          f" ({len(free_before)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev.json")
    parser.add_argument("--lme-data", type=Path, default=DATA / "lme-dev.json")
    parser.add_argument("--lme", default=DEFAULT_LME, help="LongMemEval positions in hook_injection.py's order")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--save", type=Path, help="write every answer's injected notes here (JSON)")
    parser.add_argument("--compare", type=Path, help="a --save from another tree: are content prompts' notes the same?")
    args = parser.parse_args()
    compare = json.loads(args.compare.read_text("utf-8")) if args.compare else None
    settings = HookSettings()
    embedder = locomo.cached_embedder(args.embedder)
    started = time.perf_counter()
    answers: dict = {}
    work = Path(tempfile.mkdtemp(prefix="content-free-"))
    try:
        for store, name, cwd in each_probe_store(embedder, args.locomo, args.lme_data, args.lme, work):
            ask_all(store, name, cwd, settings, answers)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(answers, indent=1), "utf-8")
    summary(answers, compare)
    print(f"\n{len(CONTENT_FREE)} content-free and {len(CONTENT)} content prompts per store; "
          f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
