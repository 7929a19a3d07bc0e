"""The seed-phrase rule's cost on hostile strings, its form before branch redact16 against this tree's (issue 40).

Both patterns search the same strings, taking turns, ``--rounds`` rounds (the minimum kept): redaction_cost.py's
``adversarial`` strings built on each form (a form's own sample match, cut, repeated, before long runs), and the
runs that made the old form slow (a cue word and a space repeated, "phrase" being both cue and filler). Seconds
per megabyte for each string, the slowest of each form, and whether both find the same secret spans on each.

    python benchmarks/speed/seed_phrase_cost.py [--size 1048576] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.speed.redaction_cost import adversarial  # noqa: E402

from localmem.privacy.patterns import GENERIC_RULES  # noqa: E402

# The rule as main had it before this branch (redact15's), for the comparison.
BEFORE = re.compile(r"(?i)(?:mnemonic|seed|phrase)s?[\"']?[ \t]*(?:(?:phrase|is|was)[ \t]*){0,2}[:=(]?[ \t]*[\"']?"
                    r"(?P<secret>(?=(?P<words>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){11,23}))(?P=words))(?![ \t]*[a-z])",
                    re.MULTILINE)
AFTER = re.compile(next(pattern for kind, pattern in GENERIC_RULES if kind == "seed-phrase"), re.MULTILINE)
RUNS = ("seed ", "seeds ", "phrase ", "mnemonic ", "seed phrase is ", "seed", "mnemonic: ", "phrase " * 40 + ".")


def secrets(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span("secret") for m in pattern.finditer(text) if m.group("secret") is not None]


def seconds(pattern: re.Pattern[str], text: str) -> float:
    started = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="characters per hostile string")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    strings = {f"before:{name}": text for name, text in adversarial(BEFORE, args.size, 0).items()}
    strings.update({f"after:{name}": text for name, text in adversarial(AFTER, args.size, 0).items()})
    strings.update({f"run:{unit!r}": (unit * (args.size // len(unit) + 1))[:args.size] for unit in RUNS})
    per_mb = args.size / (1 << 20)
    times: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    for round_ in range(args.rounds):
        for name, text in strings.items():
            for form in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                took = seconds(BEFORE if form == "before" else AFTER, text) / per_mb
                times[form][name] = min(times[form].get(name, took), took)
    differ = [name for name, text in strings.items() if secrets(BEFORE, text) != secrets(AFTER, text)]
    report = {form: {"total_seconds_per_mb": round(sum(t.values()), 2),
                     "slowest": max(t, key=t.get), "slowest_seconds_per_mb": round(max(t.values()), 3)}
              for form, t in times.items()}
    report["strings"] = len(strings)
    report["answers_differ"] = differ
    report["runs_seconds_per_mb"] = {name: {form: round(times[form][name], 3) for form in times}
                                     for name in strings if name.startswith("run:")}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
