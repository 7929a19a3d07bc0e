"""Sync throughput of two source trees, paired: benchmarks/replication/sync.py's file-peer cases (a first
sync of N memories, then 100 changes into a store of BIG), run in alternating subprocesses
(order flipped every round) so a loaded machine's drift falls on both trees alike. The third case
(``full_ms``) is the same 100 changes synced as a full comparison: the small store's pair token
removed first, as after a rollback to before the pair's first sync (the two tokens differ: the
sync compares every memory; the rollback rule branches rollback16 and rollback17 built, not
shipped, also doubted that store's stamps there).

    python benchmarks/replication/sync_paired.py BASE_TREE [--n 2000] [--big 6000] [--rounds 4]

BASE_TREE is another checkout (e.g. ``git archive f49a3c6 | tar -x -C /tmp/base``); this
tree is the other side. Prints each run and the medians with their ratio (this / base).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
RUN = r'''
import json, os, sys, tempfile
from pathlib import Path
tree = sys.argv[1]
# The sync benchmark sits in benchmarks/replication/ since the benchmarks were grouped, in benchmarks/ before.
folder = next(f for f in (tree + "/benchmarks/replication", tree + "/benchmarks") if os.path.exists(f + "/sync.py"))
sys.path[:0] = [tree, folder, tree + "/benchmarks", tree + "/tests"]
import sync as bench
from localmem import MemoryStore
from localmem.replication.sync_side import StoreSide


def full_comparison(folder, big):
    """small_changes' 100 changes, synced after the small store's pair token was removed."""
    bench.build(folder / "full-big.db", big)
    with MemoryStore(folder / "full-big.db", embedder="hash") as a, \
            MemoryStore(folder / "full-small.db", embedder="hash") as b:
        bench.timed_sync(a, StoreSide(b, "b"))
        bench.timed_sync(a, StoreSide(b, "b"))  # past the first sync's echoes, as small_changes does
        ids = [row[0] for row in b.conn.execute("SELECT id FROM memories LIMIT 60")]
        for memory_id in ids[:50]:
            b.update(memory_id, content=f"edited on the other machine: {memory_id}")
        b.store_many(bench.items(40, start=big))
        for memory_id in ids[50:60]:
            b.delete(memory_id)
        b.conn.execute("DELETE FROM sync_pair_tokens")
        seconds, summary = bench.timed_sync(a, StoreSide(b, "b"))
    assert summary.full_comparison and summary.copied_to_local == 90 and summary.deleted_on_local == 10, summary
    assert not summary.conflicts, summary
    return seconds


with tempfile.TemporaryDirectory() as tmp:
    first = bench.first_sync(Path(tmp), int(sys.argv[2]))
    changes = bench.small_changes(Path(tmp), int(sys.argv[3]))
    full = full_comparison(Path(tmp), int(sys.argv[3]))
print(json.dumps({"first_rate": first["rate"], "settle_ms": changes["settle_seconds"] * 1000,
                  "changes_ms": changes["seconds"] * 1000, "full_ms": full * 1000}))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the other source tree")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--big", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "this": str(HERE)}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
        for name, tree in order:
            env = {**os.environ, "PYTHONPATH": tree}
            done = subprocess.run([sys.executable, "-c", RUN, tree, str(args.n), str(args.big)], cwd=tree, env=env,
                                  capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(round_, name, runs[name][-1], flush=True)
    for key in ("first_rate", "settle_ms", "changes_ms", "full_ms"):
        base = statistics.median(r[key] for r in runs["base"])
        this = statistics.median(r[key] for r in runs["this"])
        print(f"{key}: base median {base:.1f}, this median {this:.1f}, this/base {this / base:.2f}")


if __name__ == "__main__":
    main()
