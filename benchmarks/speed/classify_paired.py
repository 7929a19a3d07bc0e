"""Two trees' classifier cost per write on real text, alternating in one process.

    python benchmarks/speed/classify_paired.py BEFORE_TREE [AFTER_TREE] [--rounds 7]

Loads ``localmem/classify.py`` of each tree as its own module (nothing else of the
trees is imported) and classifies every dialog turn of the LoCoMo dev conversations
(``../shared/data/locomo-dev.json``), the two trees in turns, the order alternating
round by round. Prints microseconds per write per round, the median ratio after/before
(steadier than either figure on a shared machine), and on how many turns the type differs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"


def load_classifier(tree: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, tree / "localmem" / "classify.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no localmem/classify.py under {tree}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def turn_texts(data: Any) -> list[str]:
    """Every dialog turn's text (a dict with ``speaker`` and ``text``), in file order."""
    texts: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("text"), str) and "speaker" in item:
                texts.append(item["text"])
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=ROOT)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    before, after = load_classifier(args.before, "classify_before"), load_classifier(args.after, "classify_after")
    texts = turn_texts(json.loads(args.data.read_text(encoding="utf-8")))
    print(f"{len(texts)} turns, {sum('?' in t for t in texts)} with a '?'")
    ratios = []
    for round_ in range(args.rounds):
        seconds = {}
        arms = [("before", before), ("after", after)]
        for name, module in arms if round_ % 2 == 0 else reversed(arms):
            started = time.perf_counter()
            for text in texts:
                module.classify(text)
            seconds[name] = time.perf_counter() - started
        ratios.append(seconds["after"] / seconds["before"])
        print(f"round {round_}: before {seconds['before'] * 1e6 / len(texts):.1f} µs/write, "
              f"after {seconds['after'] * 1e6 / len(texts):.1f} µs/write, ratio {ratios[-1]:.3f}")
    changed = sum(before.classify(t)[0] != after.classify(t)[0] for t in texts)
    print(f"median ratio after/before {statistics.median(ratios):.3f}; type differs on {changed} of {len(texts)} turns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
