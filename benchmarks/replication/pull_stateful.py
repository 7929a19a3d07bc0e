"""The stateful push/pull test (tests/test_pull_stateful.py) run long: many random examples, a seed.

    python benchmarks/replication/pull_stateful.py [--examples 200] [--seed N] [--steps 20]

CI runs a few derandomized examples; this runs ``--examples`` fresh ones (a new seed each run
unless ``--seed`` is given, printed so a failure can be replayed) against one real AutoMem
server (shared/tools/automem-server, started by the test module), in a pytest subprocess, and
prints the outcome, the seed and the time taken. Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="Hypothesis examples (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="replay one run (default: a new seed)")
    parser.add_argument("--steps", type=int, default=20, help="rules per example (default 20)")
    args = parser.parse_args()
    if args.examples < 1 or args.steps < 1:
        parser.error("--examples and --steps must be at least 1")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2 ** 32)
    env = dict(os.environ, LOCALMEM_STATEFUL_EXAMPLES=str(args.examples), LOCALMEM_STATEFUL_SEED=str(seed),
               LOCALMEM_STATEFUL_STEPS=str(args.steps))
    print(f"pull_stateful: {args.examples} examples of {args.steps} steps, seed {seed}", flush=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", str(HERE / "tests" / "test_pull_stateful.py"),
                           "-q", "-x", "-s", "-p", "no:cacheprovider", "-rs"], cwd=HERE, env=env, check=False)
    seconds = time.perf_counter() - started
    print(f"pull_stateful: {'passed' if done.returncode == 0 else 'FAILED'} in {seconds:.0f} s "
          f"(seed {seed}; replay with --seed {seed} --examples {args.examples} --steps {args.steps})")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
