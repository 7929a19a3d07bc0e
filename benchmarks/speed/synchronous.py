"""What ``LOCALMEM_SYNCHRONOUS=FULL`` costs a writer, against the default NORMAL.

In WAL mode ``synchronous=NORMAL`` syncs only at checkpoints (a power cut can
lose the last commits, never the file's consistency); FULL also syncs the WAL
at every commit, so a commit that returned survives a power cut. The cost is
one fsync per transaction, so it depends on the disk and on how many
transactions a workload makes:

1. ``store()``: N memories, one transaction each;
2. ``store_many()``: the same N memories in calls of ``--batch`` (one transaction per call).

Both run under NORMAL and FULL in the same run, in fresh files in ``--dir``
(default: a temporary folder under the current directory, so the disk is the
one you run it on; /tmp can be a tmpfs, where fsync costs nothing). The rounds
interleave the modes and the median counts, because machines are noisy. The
hash embedder keeps the model out of the timings. Prints the table, and with
``--write`` puts it in ``docs/results/history.md`` (section ``synchronous``).

    python benchmarks/speed/synchronous.py [--n 300] [--batch 50] [--rounds 3] [--dir PATH] [--write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from localmem import Config, MemoryStore  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402

MODES = ("NORMAL", "FULL")


def file_system(path: Path) -> str:
    """The type of the file system ``path`` is on (from /proc/mounts), or "?"."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and str(path).startswith(fields[1]) and len(fields[1]) > len(best):
                    best, kind = fields[1], fields[2]
    except OSError:
        pass
    return kind


def items(n: int, offset: int) -> list[dict[str, object]]:
    return [{"content": f"benchmark memory {offset + i}: decided to keep the cache warm for route {i % 17}",
             "tags": [f"route:{i % 17}"]} for i in range(n)]


def run(folder: Path, mode: str, workload: str, n: int, batch: int, round_no: int) -> float:
    """Seconds to store ``n`` memories with ``workload`` under ``mode``, in a fresh file."""
    path = folder / f"{workload}-{mode}-{round_no}.db"
    config = Config.from_env().with_changes(synchronous=mode)
    with MemoryStore(path, embedder="hash", config=config) as store:
        actual = store.conn.execute("PRAGMA synchronous").fetchone()[0]
        assert actual == {"NORMAL": 1, "FULL": 2}[mode], actual
        data = items(n, 0)
        start = time.perf_counter()
        if workload == "store":
            for item in data:
                store.store(**item)  # type: ignore[arg-type]
        else:
            for begin in range(0, n, batch):
                store.store_many(data[begin:begin + batch])
        elapsed = time.perf_counter() - start
        assert store.health()["memory_count"] == n
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="memories per workload (default 300)")
    parser.add_argument("--batch", type=int, default=50, help="memories per store_many call (default 50)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median counts")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (default: ./.bench-*)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/results/history.md")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix=".bench-synchronous-", dir=args.dir or Path.cwd())).resolve()
    try:
        times: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            order = MODES if round_no % 2 == 0 else MODES[::-1]
            for workload in ("store", "store_many"):
                for mode in order:
                    times.setdefault((workload, mode), []).append(
                        run(folder, mode, workload, args.n, args.batch, round_no))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    setting = (f"n={args.n}, store_many batch={args.batch}, rounds={args.rounds}, dir on "
               f"{file_system(folder)}, python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    print(f"synchronous NORMAL vs FULL: {setting}")
    rows = []
    for workload in ("store", "store_many"):
        normal = statistics.median(times[(workload, "NORMAL")])
        full = statistics.median(times[(workload, "FULL")])
        transactions = args.n if workload == "store" else -(-args.n // args.batch)
        rows.append((workload, transactions, normal, full))
        print(f"{workload:<12} {transactions:>5} transactions  NORMAL {normal:.3f} s  FULL {full:.3f} s  "
              f"FULL/NORMAL {full / normal:.2f}")
    if args.write:
        command = "python benchmarks/speed/synchronous.py " + " ".join(sys.argv[1:])
        lines = ["## Durability: `LOCALMEM_SYNCHRONOUS=FULL` against the default NORMAL", "",
                 f"Command: `{command.strip()}`  ", f"Setting: {setting}; localmem git {git_revision()}", "",
                 "| workload | transactions | NORMAL s | FULL s | FULL / NORMAL | extra ms per transaction |",
                 "|---|---:|---:|---:|---:|---:|"]
        for workload, transactions, normal, full in rows:
            lines.append(f"| `{workload}` | {transactions} | {normal:.3f} | {full:.3f} | {full / normal:.2f} | "
                         f"{1000 * (full - normal) / transactions:.2f} |")
        lines += ["", "FULL adds one fsync of the WAL per commit: one-at-a-time `store()` pays it on every "
                  "memory, `store_many` once per call. NORMAL (the default) can lose the last commits in a "
                  "power cut, never the file's consistency; a killed process loses nothing under either."]
        write_section("synchronous", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
