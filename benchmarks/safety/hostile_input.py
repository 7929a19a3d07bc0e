"""Hostile input at scale: the property tests of ``tests/test_hostile_input.py`` with many random examples.

Runs pytest on that file with ``LOCALMEM_FUZZ_EXAMPLES`` examples per property
(default 3000) and fresh random seeds (``LOCALMEM_FUZZ_RANDOM=1``), and records,
per property, the examples run, the failures (a crash, a 500, a rejection that
was not a 4xx ``LocalMemError``, or a rejected call that changed stored data)
and the time, in ``docs/results/history.md`` (reliability section, hostile part).

    python benchmarks/safety/hostile_input.py [--examples 3000] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.reliability_harness import environment, write_part

TARGET = "tests/test_hostile_input.py"


def run(examples: int) -> tuple[dict[str, dict[str, int]], str, int, float]:
    env = {**os.environ, "LOCALMEM_FUZZ_EXAMPLES": str(examples), "LOCALMEM_FUZZ_RANDOM": "1",
           "PYTHONPATH": str(ROOT)}
    start = time.time()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TARGET,
                           "--hypothesis-show-statistics", "-rA"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    elapsed = time.time() - start
    stats: dict[str, dict[str, int]] = {}
    current = None
    for name in re.findall(r"^(?:PASSED|FAILED|SKIPPED|ERROR) tests/test_hostile_input\.py::(\w+)", proc.stdout, re.M):
        stats.setdefault(name, {"passing": 0, "failing": 0, "invalid": 0})  # listed even without statistics
    for line in proc.stdout.splitlines():
        header = re.match(r"tests/test_hostile_input\.py::(\w+):", line)
        if header:
            current = header.group(1)
            stats.setdefault(current, {"passing": 0, "failing": 0, "invalid": 0})
            continue
        counts = re.search(r"(\d+) passing, (\d+) failing, and (\d+) invalid", line)
        if counts and current:
            for key, value in zip(("passing", "failing", "invalid"), counts.groups()):
                stats[current][key] += int(value)
    return stats, proc.stdout[-3000:], proc.returncode, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    stats, tail, code, elapsed = run(args.examples)
    if code:
        print(tail)
    passed_line = next((line for line in tail.splitlines() if " passed" in line or " failed" in line), "")
    rows = []
    for name, counts in stats.items():
        rows.append(f"| `{name}` | {counts['passing'] + counts['failing']:,} | {counts['failing']} |")
    print("\n".join(rows))
    total = sum(c["passing"] + c["failing"] for c in stats.values())
    failing = sum(c["failing"] for c in stats.values())
    command = "python benchmarks/safety/hostile_input.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = "\n".join([
        "### Hostile input: property-based tests at scale",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {environment()}  ",
        f"Total run time: {elapsed:.0f} s; pytest: {passed_line.strip(' =')}",
        "",
        f"`{TARGET}` with {args.examples:,} random examples per property (hypothesis, fresh seeds; the test "
        "suite runs 60 derandomised ones). Inputs: FTS5 syntax (quotes, `NEAR(`, `*`, `-`, `:`, parentheses, "
        "`AND`/`OR`/`NOT`, column filters), SQL-injection strings, NUL bytes, lone surrogates, emoji, "
        "right-to-left and bidi-control text, 1 MB strings, NaN / ±inf / 1e39 / wrong-length / zero / "
        "non-numeric vectors, huge, negative, fractional and non-numeric limits and offsets, metadata nested "
        "up to 200 levels or 1 MB large, unparseable and out-of-range timestamps, unknown enum values "
        "(types, relation types, sort, tag and state modes), unknown fields; over HTTP also raw bodies "
        "(invalid JSON and UTF-8, `NaN`, `1e999`, 100k nested brackets, 1 MB strings) and percent-encoded "
        "query strings and path ids; vectors of every magnitude from 1e-46 to 1e40 (stored and as queries: "
        "an accepted one must find itself with a cosine near 1, and no response may hold NaN or infinity); "
        "`decode_json` on hostile JSON text (surrogate escapes, 100k-deep nesting, 5000-digit numbers, NaN); "
        "and the MCP wire: random JSON-RPC lines, raw bytes and invalid UTF-8 through the stdio transport's "
        "decoder, where every request (an id and a method) must be forwarded or answered under its id. "
        "A failure is a crash, an HTTP status ≥ 500, a rejection that is not a "
        "400-class `LocalMemError` of the contract, a result that is not strict JSON, or a rejected call "
        "that changed any stored row.",
        "",
        "| property | examples | failures |",
        "|---|---:|---:|",
        *rows,
        f"| **total** | **{total:,}** | **{failing}** |",
        "",
        "Bugs it found (fixed): a 422 from `POST /api/v1/memory/recall` echoed the caller's `inf` or "
        "lone-surrogate input back, which cannot be rendered as JSON and became a 500 "
        "(`localmem/kagura/request.py`, `_Collector.add`); with fresh seeds, an unknown top-level field whose "
        "*name* is a lone surrogate (`{\"\\ud800\": null}`) did the same (`RequestValidationError` now escapes "
        "names; `tests/test_hostile_field_names.py`). The property `test_vector_magnitudes` itself failed on "
        "a hostile query text next to an acceptable vector (it now checks that call as a rejection).",
    ])
    if not args.no_write:
        write_part("hostile", text)
        print("wrote docs/results/history.md")
    return 0 if code == 0 and failing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
