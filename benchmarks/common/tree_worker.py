"""A benchmark's worker run with one tree's code: a fresh database file, the tree first on
``PYTHONPATH`` (and the working folder), and its answer read from the last line it prints (JSON).
Paired scripts (writes_paired.py, edge_call_parts.py) run the same worker in each tree in turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence


def remove_database(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def run_in_tree(tree: Path, worker: str, db: Path, args: Sequence[str]) -> dict[str, Any]:
    """``python -c worker ARGS`` with ``tree``'s code on a database ``db`` made fresh for it (and
    removed after); its last line of output as JSON. A failing worker stops the run with its stderr."""
    remove_database(db)
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", LOCALMEM_DAEMON="0")
    done = subprocess.run([sys.executable, "-c", worker, *args], env=env, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the worker failed:\n{done.stderr[-3000:]}")
    remove_database(db)
    return json.loads(done.stdout.strip().splitlines()[-1])
