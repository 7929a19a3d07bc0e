"""Push and reembed throughput.

Each case runs in fresh temporary files, against real servers on loopback:

1. baseline: ``store_many`` of the same N memories into a new file (hash embedder);
2. ``localmem push`` (the CLI, as a user runs it) of the N memories and N/2 edges to
   ``localmem serve`` (hash embedder: the vectors are carried, in ``POST /memory/batch``);
3. the same push to the real AutoMem (shared/tools/automem-server, FalkorDB + qdrant-client
   local mode): with the vectors carried (one ``POST /memory`` each, since AutoMem's batch
   route drops embeddings), and from a ``hash:64`` store, where AutoMem embeds itself and the
   batch route is used;
4. a second push after 1% of the memories changed (PATCH only those), to each server;
5. ``localmem reembed`` from ``hash:64`` to ``hash:384`` of the N memories, next to the bare
   ``embed`` throughput of the new embedder on the same texts; with ``--model`` also to
   all-MiniLM-L6-v2 (offline), next to MiniLM's bare ``embed``.

Figures are memories per second (memories sent, or re-embedded, per second of the command's
own timing). The machine is shared: compare with the same-run baselines. The table is printed;
``--write`` puts it into docs/results/history.md between ``<!-- push:start -->`` markers.

    python benchmarks/replication/push.py [--n 1000] [--model] [--model-n 500] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from localmem import MemoryStore  # noqa: E402
from localmem.embedders import resolve_embedder  # noqa: E402
from remote_servers import CLEARED, automem, localmem_serve  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402


def items(n: int) -> list[dict[str, Any]]:
    topics = ["database", "deploy", "auth", "billing", "search", "frontend", "cache", "queue"]
    return [{"content": f"Memory {i}: the {topics[i % 8]} team decided to change step {i % 97} "
                        f"of the {topics[(i * 3) % 8]} runbook after incident {i // 8}",
             "tags": ["bench", f"topic:{topics[i % 8]}"], "importance": round(0.3 + (i % 7) / 10, 2),
             "metadata": {"n": i, "source": "benchmark"},
             "timestamp": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"} for i in range(n)]


def make_store(path: Path, n: int, embedder: str) -> float:
    """The store to push; returns store_many's memories/s (the baseline)."""
    with MemoryStore(path, embedder=embedder) as store:
        started = time.perf_counter()
        ids = store.store_many(items(n))
        rate = n / (time.perf_counter() - started)
        for i in range(1, n, 2):
            store.associate(ids[i - 1], ids[i], "RELATES_TO", 0.5)
    return rate


def cli(*args: str, token: str | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["PYTHONPATH"] = str(ROOT)
    if token:
        env["AUTOMEM_API_TOKEN"] = token
    done = subprocess.run([sys.executable, "-m", "localmem", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"localmem {' '.join(args)} failed: {done.stderr[-2000:]} {done.stdout[-2000:]}")
    return json.loads(done.stdout)


def change_one_percent(path: Path, embedder: str) -> int:
    with MemoryStore(path, embedder=embedder) as store:
        count = max(1, store.health()["memory_count"] // 100)
        ids = [m["id"] for m in store.by_tag(["bench"], limit=min(200, count))["memories"]]
        for memory_id in ids:
            store.update(memory_id, importance=0.99, tags=["bench", "changed"])
    return count


def push_case(label: str, server: Any, path: Path, n: int, embedder: str, rows: list[list[str]]) -> None:
    first = cli("--db", str(path), "push", server.url, "--batch-size", "100", token=server.token)
    sent = first["memories"]["created"]
    rows.append([label, f"{sent} memories + {first['edges']['created']} edges",
                 f"{first['memories_per_second']}", f"{first['seconds']:.1f} s",
                 first["embeddings"]["plan"]])
    changed = change_one_percent(path, embedder)
    again = cli("--db", str(path), "push", server.url, token=server.token)
    rows.append([f"{label}, second push ({changed} changed)", f"{again['memories']['updated']} updated",
                 f"{again['memories_per_second']}", f"{again['seconds']:.2f} s", "only the changes"])


def reembed_case(path: Path, target: str, n: int, rows: list[list[str]], label: str) -> None:
    embedder = resolve_embedder(target)
    texts = [item["content"] for item in items(n)]
    embedder.embed(texts[:8])  # load first
    started = time.perf_counter()
    for start in range(0, n, 64):
        embedder.embed(texts[start:start + 64])
    bare = n / (time.perf_counter() - started)
    report = cli("--db", str(path), "reembed", "--embedder", target)
    rows.append([label, f"{report['processed']} memories", f"{report['memories_per_second']}",
                 f"{report['seconds']:.1f} s", f"bare embed of {embedder.name}: {bare:.0f}/s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="memories to push and re-embed (default 1000)")
    parser.add_argument("--model", action="store_true", help="also re-embed to all-MiniLM-L6-v2")
    parser.add_argument("--model-n", type=int, default=500, help="memories for the MiniLM reembed (default 500)")
    parser.add_argument("--no-automem", action="store_true", help="skip the AutoMem cases")
    parser.add_argument("--write", action="store_true", help="write the table into docs/results/history.md")
    args = parser.parse_args(argv)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="localmem-push-bench-") as tmp:
        work = Path(tmp)
        baseline = make_store(work / "baseline.db", args.n, "hash")
        rows.append(["baseline: store_many into a new file", f"{args.n} memories", f"{baseline:.0f}", "", "hash"])
        with localmem_serve(work / "server.db") as server:
            make_store(work / "to-localmem.db", args.n, "hash")
            push_case("push to localmem serve", server, work / "to-localmem.db", args.n, "hash", rows)
        if not args.no_automem:
            with automem(work / "automem-state") as server:
                make_store(work / "to-automem.db", args.n, "hash")
                push_case("push to AutoMem, vectors carried", server, work / "to-automem.db", args.n, "hash", rows)
                make_store(work / "to-automem-64.db", args.n, "hash:64")
                push_case("push to AutoMem, AutoMem embeds", server, work / "to-automem-64.db", args.n,
                          "hash:64", rows)
        make_store(work / "reembed.db", args.n, "hash:64")
        reembed_case(work / "reembed.db", "hash:384", args.n, rows, "reembed hash:64 -> hash:384")
        if args.model:
            make_store(work / "reembed-model.db", args.model_n, "hash")
            reembed_case(work / "reembed-model.db", "all-MiniLM-L6-v2", args.model_n, rows,
                         "reembed hash -> all-MiniLM-L6-v2")
    lines = ["## Push and reembed throughput", "",
             f"`python benchmarks/replication/push.py --n {args.n}{' --model' if args.model else ''}` at {git_revision()}; "
             "real servers on loopback (AutoMem 8ff266e with FalkorDB and qdrant-client's in-memory mode).", "",
             "| case | sent | memories/s | time | note |", "|---|---|---:|---:|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("push", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
