"""Running a stateful test (a Hypothesis state machine CI runs a few derandomized examples of) long.

``run_long`` parses ``--examples``, ``--seed`` and ``--steps``, runs the test file in a pytest
subprocess with fresh random examples from the seed (a new seed each run unless one is given,
printed so a failure can be replayed), and prints the outcome, the seed and the time taken.
The test file reads LOCALMEM_STATEFUL_EXAMPLES, _SEED and _STEPS. Exit status: pytest's, or 1 when
the test was skipped (nothing ran).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_long(name: str, description: str, test_file: str, examples: int, steps: int,
             pytest_flags: tuple[str, ...] = ("-q", "-x")) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--examples", type=int, default=examples, help=f"Hypothesis examples (default {examples})")
    parser.add_argument("--seed", type=int, default=None, help="replay one run (default: a new seed)")
    parser.add_argument("--steps", type=int, default=steps, help=f"rules per example (default {steps})")
    args = parser.parse_args()
    if args.examples < 1 or args.steps < 1:
        parser.error("--examples and --steps must be at least 1")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 32)
    env = dict(os.environ, LOCALMEM_STATEFUL_EXAMPLES=str(args.examples), LOCALMEM_STATEFUL_SEED=str(seed),
               LOCALMEM_STATEFUL_STEPS=str(args.steps))
    print(f"{name}: {args.examples} examples of {args.steps} steps, seed {seed}", flush=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "tests" / test_file), *pytest_flags, "-rs",
                           "-p", "no:cacheprovider"], cwd=ROOT, env=env, check=False, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    # A test skipped (say, the AutoMem server's tool not found) ran nothing: not a pass.
    outcome = "FAILED" if done.returncode else "passed" if " passed" in summary else "SKIPPED (see above why)"
    print(f"{name}: {outcome} in {seconds:.0f} s "
          f"(seed {seed}; replay with --seed {seed} --examples {args.examples} --steps {args.steps})")
    return done.returncode or (0 if outcome == "passed" else 1)
