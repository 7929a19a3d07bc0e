"""The stateful push/pull test (tests/test_pull_stateful.py) run long: many random examples, a seed.

    python benchmarks/replication/pull_stateful.py [--examples 200] [--seed N] [--steps 20]

CI runs a few derandomized examples; this runs ``--examples`` fresh ones (a new seed each run
unless ``--seed`` is given, printed so a failure can be replayed) against one real AutoMem
server (shared/tools/automem-server, started by the test module), in a pytest subprocess, and
prints the outcome, the seed and the time taken. Exit status: pytest's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.common.stateful_runs import run_long  # noqa: E402


def main() -> int:
    return run_long("pull_stateful", __doc__.splitlines()[0], "test_pull_stateful.py", 200, 20, ("-q", "-x", "-s", "-rs"))


if __name__ == "__main__":
    sys.exit(main())
