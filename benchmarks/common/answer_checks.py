"""What the latency benchmarks share for before/after checks of a speed change:
the clock they time with, and a dump of every answer to compare two runs by."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time (steadier on a shared machine)")
    parser.add_argument("--dump", help="write every answer's ids and scores as JSON (before/after checks)")


def clock_of(args: argparse.Namespace) -> Callable[[], float]:
    return time.process_time if args.clock == "cpu" else time.perf_counter


def dump_answers(path: str, store: Any, sets: dict[str, Iterable[tuple[str, dict[str, Any]]]],
                 key: Callable[[dict[str, Any]], str] = lambda result: result["id"]) -> None:
    """Each set's answers as lists of (``key`` of the result, final score, relevance or None),
    written to ``path``."""
    answers = {name: [[(key(r), r["final_score"], r.get("relevance")) for r in store.recall(query, **kwargs)["results"]]
                      for query, kwargs in work] for name, work in sets.items()}
    Path(path).write_text(json.dumps(answers))


def compare_answers(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[int, int, float]]:
    """Per set of two dumps: (answers, answers whose ids or order differ, largest difference of a
    score or a relevance; a relevance present in one dump and not the other counts as infinite)."""
    out = {}
    for name, answers in after.items():
        reference = before.get(name, [])
        if len(reference) != len(answers):
            raise ValueError(f"{name}: {len(reference)} answers before, {len(answers)} after")
        moved = sum(1 for x, y in zip(reference, answers) if [r[0] for r in x] != [r[0] for r in y])
        # Older dumps hold (key, score) pairs: only what both dumps hold is compared.
        worst = max((_difference(s, t) for x, y in zip(reference, answers) for r, q in zip(x, y)
                     for s, t in zip(r[1:], q[1:])), default=0.0)
        out[name] = (len(answers), moved, worst)
    return out


def _difference(before: float | None, after: float | None) -> float:
    if before is None or after is None:
        return 0.0 if before is after else float("inf")
    return abs(before - after)


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/common/answer_checks.py BEFORE.json AFTER.json``: exit 1 when any answer's
    ids or order differ, or a score or relevance by more than 1e-9."""
    parser = argparse.ArgumentParser(description="compare two --dump files")
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args(argv)
    result = compare_answers(json.loads(Path(args.before).read_text()), json.loads(Path(args.after).read_text()))
    failed = False
    for name, (count, moved, worst) in result.items():
        print(f"{name}: {count} answers, {moved} differ in ids or order, largest score or relevance difference {worst:.3g}")
        failed = failed or moved > 0 or worst > 1e-9
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
