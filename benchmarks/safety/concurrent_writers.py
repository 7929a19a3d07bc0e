"""The concurrent-writers test (tests/test_concurrent_writers.py) run long: fresh seeds for a time budget.

    python benchmarks/safety/concurrent_writers.py [--first-seed 1000] [--seconds 600] [--steps 40] [--out FILE]

Each seed is one example of the test (four workers' random steps, the transcript writer, the checker, one or
two reembeds) and prints one line: ``ok`` with what it did, or ``FAIL`` with the failure in full. A failing seed
replays its plan (not its interleaving) with ``LOCALMEM_CONCURRENCY_FIRST_SEED=N LOCALMEM_CONCURRENCY_SEEDS=1
LOCALMEM_CONCURRENCY_STEPS=S python -m pytest tests/test_concurrent_writers.py -k many_writers``.

Prompt hooks are answered as the warm process answers them (no lock held around them: until the lead's fix after
branch concur13 their project-scope reads made other threads' calls fail). Exit status: 1 when a seed failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def victims(text: str) -> list[str]:
    """The steps whose call failed, from the test's failure message (``name (seed N): ...``)."""
    return sorted({line.split(" (seed ")[0].strip() for line in text.splitlines() if " (seed " in line})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=600.0, help="no new seed is started after this long")
    parser.add_argument("--steps", type=int, default=40, help="each worker's steps")
    parser.add_argument("--out", type=Path, help="also append the lines to this file")
    args = parser.parse_args()
    if args.steps < 1 or args.seconds <= 0:
        parser.error("--steps and --seconds must be positive")
    os.environ["LOCALMEM_CONCURRENCY_STEPS"] = str(args.steps)  # read when the test module is imported
    sys.path.insert(0, str(ROOT / "tests"))
    import tests.test_concurrent_writers as module

    out = open(args.out, "a", encoding="utf-8") if args.out else None
    tally: Counter[str] = Counter()
    stop, seed = time.monotonic() + args.seconds, args.first_seed
    while time.monotonic() < stop:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="localmem-concurrent-") as folder:
            try:
                run = module.run_example(Path(folder), seed)
                line = (f"seed {seed} ok: {time.monotonic() - started:.1f} s, {len(run.model.stored)} stored by the "
                        f"workers, {len(run.messages)} transcript messages ({len(run.copies)} logged twice), "
                        f"{run.checks} checks, {run.expected} NotFoundError, reembed to {run.reembedded['embedder']}"
                        f" ({run.unfinished_reembeds} left in_progress by a write after its last batch)")
                tally["ok"] += 1
            except BaseException as exc:  # noqa: BLE001 - every failure is the finding
                failed = victims(str(exc))
                line = f"seed {seed} FAIL (failed calls: {', '.join(failed) or 'none'})\n{traceback.format_exc()}"
                tally["failed"] += 1
                tally["with a failed call"] += bool(failed)  # else only statements seen without the lock
                tally.update(f"failed call: {name}" for name in failed)
        print(line, flush=True)
        if out is not None:
            out.write(line + "\n")
            out.flush()
        seed += 1
    print(f"seeds {args.first_seed}..{seed - 1}, {args.steps} steps each: {dict(tally)}", flush=True)
    return 1 if tally["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
