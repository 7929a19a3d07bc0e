"""What redacting the prompt hook's candidate previews costs its answer (branch audit10): the
previews unredacted (before), redacted in a 400-character window (shipped), and redacted whole,
taking turns in one process on a hash-embedder store of 300 notes; medians' ratios to the first
(not absolute times: a shared machine).

    python benchmarks/speed/preview_redaction_cost.py [--words 250] [--turns 21]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localmem import MemoryStore  # noqa: E402
from localmem.hooks import selection  # noqa: E402
from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from localmem.privacy import redact  # noqa: E402
from localmem.text import visible  # noqa: E402

WORDS = ("the staging cluster deploy database orchid runs nightly backups we moved billing to postgres last week "
         "and Priya owns access reviews every month while Dana handles incidents").split()


def explain_with(window: int | None, redacted: bool) -> Callable[[Any], dict[str, Any]]:
    def explain(self: Any) -> dict[str, Any]:
        content = str(self.memory.get("content", ""))
        if redacted:
            content = redact(content if window is None else content[:window]).text
        shown = visible(" ".join(content.split()))
        return {"id": self.memory_id, "relevance": round(self.relevance, 4), "decision": self.reason,
                "preview": shown[:80] + ("…" if len(shown) > 80 else "")}
    return explain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=250, help="words a note holds (250: about 1,500 characters)")
    parser.add_argument("--turns", type=int, default=21)
    args = parser.parse_args()
    rng = random.Random(0)
    variants = {"unredacted": explain_with(None, False), "window 400": explain_with(selection.PREVIEW_WINDOW, True),
                "whole": explain_with(None, True)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "orchid" / ".git").mkdir(parents=True)
        payload = {"session_id": "s", "cwd": str(Path(folder) / "orchid"),
                   "prompt": "who owns access reviews for the staging database?"}
        with MemoryStore(Path(folder) / "m.db", embedder="hash") as store:
            store.store_many([{"content": " ".join(rng.choice(WORDS) for _ in range(args.words)),
                               "tags": ["project:orchid"]} for _ in range(300)])
            names = list(variants)
            for turn in range(args.turns):
                for name in names if turn % 2 else names[::-1]:
                    selection.Candidate.explain = variants[name]  # type: ignore[method-assign]
                    payload["session_id"] = f"s{turn}-{name.replace(' ', '-')}"
                    started = time.perf_counter()
                    answer = answer_hook_with_report(store, "UserPromptSubmit", payload, HookSettings())
                    times[name].append(time.perf_counter() - started)
    base = statistics.median(times["unredacted"])
    print(f"{len(answer.report.get('candidates', []))} candidates, notes of {args.words} words, {args.turns} turns")
    for name in names:
        print(f"{name}: {statistics.median(times[name]) / base:.3f} x the unredacted previews' median")


if __name__ == "__main__":
    main()
