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
    """Each set's answers as lists of (``key`` of the result, final score), written to ``path``."""
    answers = {name: [[(key(r), r["final_score"]) for r in store.recall(query, **kwargs)["results"]]
                      for query, kwargs in work] for name, work in sets.items()}
    Path(path).write_text(json.dumps(answers))
