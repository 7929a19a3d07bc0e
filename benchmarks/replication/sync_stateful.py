"""The stateful sync test (tests/test_sync_stateful.py) run long: many random examples, a seed.

    python benchmarks/replication/sync_stateful.py [--examples 500] [--seed N] [--steps 25]

CI runs a few derandomized examples; this runs ``--examples`` fresh ones (a new seed each run
unless ``--seed`` is given, printed so a failure can be replayed) in a pytest subprocess, and
prints the outcome, the seed and the time taken. Exit status: pytest's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.common.stateful_runs import run_long  # noqa: E402


def main() -> int:
    return run_long("sync_stateful", __doc__.splitlines()[0], "test_sync_stateful.py", 500, 25)


if __name__ == "__main__":
    sys.exit(main())
