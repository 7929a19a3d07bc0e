"""Pull throughput from the real AutoMem (shared/tools/automem-server, FalkorDB + qdrant-client
in memory) into fresh local files.

One AutoMem is started and loaded with N memories (``POST /memory/batch``) and N/2 RELATES_TO
edges (``POST /associate``); then, each as the CLI a user runs:

1. baseline: ``store_many`` of the same N texts into a new file (the same embedder), the local
   write cost a pull cannot go below;
2. the first ``localmem pull`` into a new file: every memory listed, checked, embedded here,
   stored and recorded, and the edges;
3. a second pull with nothing changed (the listing read and compared, nothing written);
4. a pull after 1% of the memories (``--changed N``) were changed on AutoMem's side (``PATCH``).

With ``--base TREE`` (a checkout of another revision), step 4 runs ``--rounds`` times, each on
fresh changes: the same file is copied and pulled by TREE's code and by this tree's, in
alternating order, and the medians and their ratio are printed (a paired run: same server,
same file, same changes).

Figures are memories per second of the command's own timing (memories taken / seconds), and
the wall time of the subprocess. The machine is shared: compare with the same-run baseline.
``--embedder`` is the local store's (default ``hash``; ``all-MiniLM-L6-v2`` for the real model, offline).
The table is printed; ``--write`` puts it into docs/results/history.md between
``<!-- pull:start -->`` markers.

    python benchmarks/replication/pull.py [--n 1000] [--embedder hash] [--changed N] [--write]
    python benchmarks/replication/pull.py --n 1000 --changed 200 --base TREE --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT, ROOT / "tests", ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from localmem import MemoryStore  # noqa: E402
from benchmarks.replication.push import items  # noqa: E402
from remote_servers import CLEARED, automem  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402

BATCH = 500  # AutoMem's limit per POST /memory/batch and per POST /associate


def load_server(server: Any, n: int) -> list[str]:
    ids: list[str] = []
    for start in range(0, n, BATCH):
        part = items(n)[start:start + BATCH]
        answer = server.client.post("/memory/batch", json={"memories": part}, timeout=600)
        answer.raise_for_status()
        ids += answer.json()["memory_ids"]
    pairs = [{"memory1_id": ids[i - 1], "memory2_id": ids[i], "type": "RELATES_TO", "strength": 0.5}
             for i in range(1, n, 2)]
    for start in range(0, len(pairs), BATCH):
        server.client.post("/associate", json={"associations": pairs[start:start + BATCH]},
                           timeout=600).raise_for_status()
    server.wait_idle(timeout=600)
    return ids


def pull(path: Path, server: Any, embedder: str, tree: Path = ROOT) -> tuple[dict[str, Any], float]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(PYTHONPATH=str(tree), AUTOMEM_API_TOKEN=server.token)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(path), "--embedder", embedder, "pull",
                           server.url, "--json"], env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"pull failed: {done.stderr[-2000:]} {done.stdout[-2000:]}")
    return json.loads(done.stdout), wall


def baseline(path: Path, n: int, embedder: str) -> float:
    """store_many's memories/s, the embedder loaded first (a pull's own figure includes loading it)."""
    with MemoryStore(path, embedder=embedder) as store:
        store.embed_texts(["warm up the embedder"])
        started = time.perf_counter()
        store.store_many(items(n))
        return n / (time.perf_counter() - started)


def change(server: Any, ids: list[str], round_: int) -> None:
    for memory_id in ids:
        server.client.patch(f"/memory/{memory_id}", json={"content": f"Changed on AutoMem ({round_}): {memory_id}"}
                            ).raise_for_status()
    server.wait_idle(timeout=600)


def paired_rounds(server: Any, ids: list[str], db: Path, args: argparse.Namespace) -> str:
    """The changed pull by ``args.base``'s code and this tree's, on copies of one file, alternating."""
    seconds: dict[str, list[float]] = {"base": [], "this": []}
    for round_ in range(1, args.rounds + 1):
        change(server, ids, round_)
        copy = db.with_name(f"base-{round_}.db")
        for suffix in ("", "-wal"):  # no process has the file open: a plain copy is a consistent one
            if Path(f"{db}{suffix}").exists():
                shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
        order = [("base", copy, args.base), ("this", db, ROOT)]
        for name, path, tree in order if round_ % 2 else order[::-1]:
            summary, _ = pull(path, server, args.embedder, tree)
            assert summary["memories"]["updated"] == len(ids), summary
            seconds[name].append(summary["seconds"])
    base, this = statistics.median(seconds["base"]), statistics.median(seconds["this"])
    return (f"\n\nPaired, {args.rounds} rounds of {len(ids)} changed memories, pull's own seconds (median): "
            f"base `{args.base}` {base:.2f} s, this tree {this:.2f} s; this / base = {this / base:.2f} "
            f"(each: {', '.join(f'{x:.2f}' for x in seconds['base'])} / {', '.join(f'{x:.2f}' for x in seconds['this'])})")


def row(label: str, summary: dict[str, Any], wall: float) -> list[str]:
    memories = summary["memories"]
    taken = memories["created"] + memories["updated"]
    rate = f"{taken / summary['seconds']:.0f}" if taken and summary["seconds"] else "-"
    return [label, f"{memories['created']}/{memories['updated']}/{memories['unchanged']}",
            f"{summary['edges']['created']}", f"{summary['seconds']:.2f}", f"{wall:.2f}", rate]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--changed", type=int, default=None, help="memories changed before the last pull (1%%)")
    parser.add_argument("--base", type=Path, default=None, help="another tree, paired on the changed pulls")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="localmem-pull-bench-") as tmp:
        work = Path(tmp)
        with automem(work / "automem-state") as server:
            started = time.perf_counter()
            ids = load_server(server, args.n)
            loaded = time.perf_counter() - started
            base = baseline(work / "baseline.db", args.n, args.embedder)
            db = work / "pulled.db"
            rows.append(row("first pull", *pull(db, server, args.embedder)))
            rows.append(row("second pull, nothing changed", *pull(db, server, args.embedder)))
            changed = min(args.n, args.changed or max(1, args.n // 100))
            change(server, ids[:changed], 0)
            rows.append(row(f"pull after {changed} changed there", *pull(db, server, args.embedder)))
            paired = paired_rounds(server, ids[:changed], db, args) if args.base else ""
    header = ["case", "created/updated/unchanged", "edges created", "seconds (pull's own)", "wall s",
              "memories/s"]
    lines = [f"N = {args.n} memories and {args.n // 2} edges on the real AutoMem (loaded in {loaded:.1f} s); "
             f"local embedder `{args.embedder}`; revision {git_revision()}.",
             f"Baseline `store_many` of the same {args.n} texts into a new file, in-process with the embedder "
             f"already loaded: {base:.0f} memories/s (a pull's own seconds include loading it).", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines) + paired
    print(table)
    if args.write:
        write_section("pull", "## Pull from AutoMem (issue 36)\n\n`python benchmarks/replication/pull.py "
                      f"--n {args.n} --embedder {args.embedder} --write`\n\n" + table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
