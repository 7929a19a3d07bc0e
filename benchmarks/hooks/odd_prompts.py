"""What the prompt hook injects for prompts the dev sets never show (issue 40): a pasted 50 KB log or traceback,
a question before or after one, a near-1 MB paste, a diff, a JSON blob, a URL alone, a file path alone, mixed
languages, emoji only, right-to-left text, NUL and lone surrogates.

Each is asked through ``answer_hook_with_report(store, "UserPromptSubmit", ...)`` in a fresh session, of the stores
content_free.py builds (the orders store of tests/test_hook_inject_cases.py, each LoCoMo dev conversation as its own
project, LongMemEval dev instances), beside a plain question about the orders store as a control. None of these
prompts is about a LoCoMo or LongMemEval conversation, so any note injected there is noise; on the orders store a
prompt that asks about its database (the control, and the questions around a log) should get the database decision.

Reported per kind: the share of answers that inject (n), the hook's reasons, what the orders store got, and the
seconds each kind took in-process (loaded shared machine: compare kinds of one run, not runs).

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/hooks/odd_prompts.py [--lme 6,7,8,9,10] [--embedder auto]
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

from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from benchmarks.hooks.content_free import DEFAULT_LME, each_probe_store  # noqa: E402
from benchmarks.common.hook_prompts import DATA  # noqa: E402
from benchmarks.quality import locomo  # noqa: E402

QUESTION = "which database does the orders service store its data in now?"


def _log(size: int) -> str:
    lines = []
    n = 0
    while sum(map(len, lines)) < size:
        lines.append(f"2026-12-06T09:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z INFO worker-{n % 8} "
                     f"GET /api/v2/items/{n * 7919 % 100000} 200 {n % 97} ms trace={n * 2654435761 % 2**32:08x}\n")
        n += 1
    return "".join(lines)[:size]


def _traceback(size: int) -> str:
    frames = "".join(f'  File "/srv/app/module_{i}.py", line {i * 3 + 1}, in handler_{i}\n'
                     f"    result = handler_{i + 1}(request, context)\n" for i in range(size // 80))
    return ("Traceback (most recent call last):\n" + frames)[:size - 40] + "\nRuntimeError: worker crashed\n"


def prompts() -> dict[str, str]:
    diff = "".join(f"diff --git a/src/mod{i}.py b/src/mod{i}.py\nindex 3b1c2a..9f8e7d 100644\n--- a/src/mod{i}.py\n"
                   f"+++ b/src/mod{i}.py\n@@ -{i},3 +{i},4 @@\n import os\n-x = {i}\n+x = {i + 1}\n+y = x * 2\n"
                   for i in range(60))
    blob = json.dumps({"items": [{"id": i, "sku": f"SKU-{i:05d}", "price": i * 1.25, "tags": ["a", "b"]}
                                 for i in range(400)]})
    return {
        "control: a plain question": QUESTION,
        "a 50 KB log": _log(50_000),
        "a 50 KB traceback": _traceback(50_000),
        "a question, then a 50 KB log": QUESTION + "\n\n" + _log(50_000),
        "a 50 KB log, then a question": _log(50_000) + "\n\n" + QUESTION,
        "a 900 KB paste": _log(900_000),
        "a diff": diff,
        "a JSON blob": blob,
        "a URL alone": "https://github.com/acme/orders/pull/1234/files#diff-3b1c2a",
        "a file path alone": "/home/dana/src/orders/app/db/migrations/0042_move_to_postgres.py",
        "mixed languages": "orders サービスのデータは今どのデータベースに? ¿y qué base de datos usa ahora? welche Datenbank?",
        "emoji only": "🚀🔥👍🏽🤔" * 20,
        "right-to-left": "באיזה מסד נתונים משתמש שירות ההזמנות? أي قاعدة بيانات تستخدم خدمة الطلبات؟",
        "the control with NUL and lone surrogates": QUESTION.replace(" does", "\x00 does").replace("data", "\ud800data")
        + "\udfff",
    }


def ask(store, name: str, cwd: Path, settings: HookSettings, rows: list) -> None:
    contents = dict(store.conn.execute("SELECT id, content FROM memories"))
    for n, (kind, prompt) in enumerate(prompts().items()):
        payload = {"session_id": f"odd-{n}", "cwd": str(cwd), "prompt": prompt, "hook_event_name": "UserPromptSubmit"}
        started = time.perf_counter()
        report = answer_hook_with_report(store, "UserPromptSubmit", payload, settings).report
        seconds = time.perf_counter() - started
        ids = report.get("memory_ids", [])
        rows.append({"store": name, "kind": kind, "seconds": seconds, "reason": report.get("reason", "injected"),
                     "notes": [" ".join(contents[m].split())[:60] for m in ids]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev.json")
    parser.add_argument("--lme-data", type=Path, default=DATA / "lme-dev.json")
    parser.add_argument("--lme", default=DEFAULT_LME, help="LongMemEval positions in hook_injection.py's order")
    parser.add_argument("--embedder", default="auto")
    args = parser.parse_args()
    settings = HookSettings()
    embedder = locomo.cached_embedder(args.embedder)
    rows: list = []
    work = Path(tempfile.mkdtemp(prefix="odd-prompts-"))
    try:
        for store, name, cwd in each_probe_store(embedder, args.locomo, args.lme_data, args.lme, work):
            ask(store, name, cwd, settings, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| prompt | dev-set stores injecting (n) | orders store got | reasons (all stores) | median s |\n"
          "|---|---|---|---|---|")
    for kind in prompts():
        mine = [r for r in rows if r["kind"] == kind]
        dev = [r for r in mine if r["store"] != "orders"]
        orders = next(r for r in mine if r["store"] == "orders")
        reasons = collections.Counter(r["reason"] for r in mine)
        seconds = sorted(r["seconds"] for r in mine)[len(mine) // 2]
        print(f"| {kind} | {sum(bool(r['notes']) for r in dev) / max(1, len(dev)):.3f} ({len(dev)}) | "
              f"{'; '.join(orders['notes']) or '-'} | "
              f"{'; '.join(f'{r}: {n}' for r, n in reasons.most_common())} | {seconds:.2f} |")
    print("\ndev-set answers that injected:")
    for r in rows:
        if r["store"] != "orders" and r["notes"]:
            print(f"  {r['store']}: {r['kind']} -> {r['notes']}")


if __name__ == "__main__":
    main()
