"""Sync throughput: ``localmem sync`` between two store files, and to a ``localmem serve`` peer.

Cases, each in fresh temporary files (hash embedder: a sync stores each copied memory
through the normal write path, so with a real model the embedder's own speed bounds it):

1. baseline: ``store_many`` of the same N memories into a new file;
2. a first sync of N memories (and N/2 edges) from one file into an empty one;
3. 100 changes (50 edits, 40 new memories, 10 deletions) on the small side, into the
   big store, after both had synced (``--big`` memories; default 20,000), and before that a
   sync with nothing changed (it reads past the first sync's echoes once);
4. the first sync of case 2 to a ``localmem serve`` peer over loopback HTTP.

Figures are memories copied per second of the sync's own timing. The machine may be
shared: compare with the same run's store_many baseline. ``--write`` puts the table into
docs/results/history.md between ``<!-- sync:start -->`` markers.

    python benchmarks/replication/sync.py [--n 10000] [--big 20000] [--write]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from localmem import MemoryStore  # noqa: E402
from localmem.replication.push_client import PushClient  # noqa: E402
from localmem.replication.sync import sync_stores  # noqa: E402
from localmem.replication.sync_remote import RemoteSide  # noqa: E402
from localmem.replication.sync_side import StoreSide  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402
from serving import stop, wait_until_healthy  # noqa: E402


def items(n: int, start: int = 0) -> list[dict[str, Any]]:
    topics = ["database", "deploy", "auth", "billing", "search", "frontend", "cache", "queue"]
    return [{"content": f"Memory {i}: the {topics[i % 8]} team changed step {i % 97} of the "
                        f"{topics[(i * 3) % 8]} runbook after incident {i // 8}",
             "tags": ["bench", f"topic:{topics[i % 8]}"], "importance": round(0.3 + (i % 7) / 10, 2),
             "metadata": {"n": i}, "timestamp": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T00:00:00+00:00"}
            for i in range(start, start + n)]


def build(path: Path, n: int) -> float:
    """A store of n memories and n/2 edges; returns store_many's memories per second."""
    with MemoryStore(path, embedder="hash") as store:
        started = time.perf_counter()
        ids = store.store_many(items(n))
        seconds = time.perf_counter() - started
        for k in range(0, n - 1, 2):
            store.associate(ids[k], ids[k + 1], "RELATES_TO", 0.5)
    return n / seconds


def timed_sync(a: MemoryStore, peer: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    summary = sync_stores(StoreSide(a, "a"), peer)
    return time.perf_counter() - started, summary


def first_sync(folder: Path, n: int) -> dict[str, float]:
    baseline = build(folder / "first-a.db", n)
    with MemoryStore(folder / "first-a.db", embedder="hash") as a, \
            MemoryStore(folder / "first-b.db", embedder="hash") as b:
        seconds, summary = timed_sync(a, StoreSide(b, "b"))
    assert summary.copied_to_peer == n, summary
    return {"baseline": baseline, "rate": n / seconds, "seconds": seconds}


def small_changes(folder: Path, big: int) -> dict[str, float]:
    build(folder / "big.db", big)
    with MemoryStore(folder / "big.db", embedder="hash") as a, \
            MemoryStore(folder / "small.db", embedder="hash") as b:
        setup, _ = timed_sync(a, StoreSide(b, "b"))
        # The next sync reads past the first one's echoes once (they are skipped, not sent
        # back); measured on its own, so the 100 changes below are what a later sync pays.
        settle, _ = timed_sync(a, StoreSide(b, "b"))
        ids = [row[0] for row in b.conn.execute("SELECT id FROM memories LIMIT 60")]
        for memory_id in ids[:50]:
            b.update(memory_id, content=f"edited on the other machine: {memory_id}")
        b.store_many(items(40, start=big))
        for memory_id in ids[50:60]:
            b.delete(memory_id)
        seconds, summary = timed_sync(a, StoreSide(b, "b"))
    assert summary.copied_to_local == 90 and summary.deleted_on_local == 10, summary
    return {"setup_seconds": setup, "settle_seconds": settle, "seconds": seconds, "rate": 100 / seconds}


def server_sync(folder: Path, n: int) -> dict[str, float]:
    build(folder / "http-a.db", n)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(folder / "http-b.db"),
                                "--embedder", "hash", "serve", "--port", str(port), "--log-level", "warning"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, url)
        with MemoryStore(folder / "http-a.db", embedder="hash") as a, PushClient(url) as client:
            here = StoreSide(a, "a")
            seconds, summary = timed_sync(a, RemoteSide(client, here.store_id))
    finally:
        stop(process)
    assert summary.copied_to_peer == n, summary
    return {"rate": n / seconds, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories of the first sync (default 10,000)")
    parser.add_argument("--big", type=int, default=20_000, help="the big store of case 3 (default 20,000)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/results/history.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="localmem-sync-bench-") as tmp:
        folder = Path(tmp)
        first = first_sync(folder, args.n)
        changes = small_changes(folder, args.big)
        http = server_sync(folder, args.n)
    rows = [
        f"| store_many of {args.n:,} (baseline) | {first['baseline']:,.0f} memories/s | 1.00 |",
        f"| first sync, file peer, {args.n:,} memories + {args.n // 2:,} edges | {first['rate']:,.0f} memories/s "
        f"({first['seconds']:.1f} s) | {first['rate'] / first['baseline']:.2f} |",
        f"| first sync, `localmem serve` peer, {args.n:,} + {args.n // 2:,} | {http['rate']:,.0f} memories/s "
        f"({http['seconds']:.1f} s) | {http['rate'] / first['baseline']:.2f} |",
        f"| a sync with nothing changed, just after the first sync of {args.big:,} (file peer) | "
        f"{changes['settle_seconds'] * 1000:,.0f} ms | |",
        f"| 100 changes into a {args.big:,}-memory store (file peer) | {changes['seconds'] * 1000:,.0f} ms "
        f"({changes['rate']:,.0f} changes/s) | |",
    ]
    table = "\n".join(["| case | throughput | ÷ store_many |", "|---|---|---|", *rows])
    print(table)
    if args.write:
        write_section("sync", f"## Sync throughput (issue 36)\n\n`python benchmarks/replication/sync.py --n {args.n} --big {args.big} --write` "
                              f"(hash embedder, revision {git_revision()}):\n\n{table}\n")


if __name__ == "__main__":
    main()
