"""What each page a commit writes costs: k one-row tables stepped per transaction, by page size.

    python benchmarks/speed/commit_page_cost.py [--commits 2000] [--rounds 7] [--pages 4]

A bare SQLite file in WAL mode with ``synchronous = NORMAL`` (as localmem opens its files) for
each page size (4 KiB, and 8 KiB as localmem makes new files), holding ``--pages`` one-row
tables. Each transaction (``BEGIN IMMEDIATE`` … ``COMMIT``, SQLite's own autocheckpoint)
updates the row of k of them, so it writes k pages to the WAL, each in a frame of the full page
size however small the row; k runs from 0 to ``--pages``, the settings taking turns in every
round. Prints CPU µs per commit (medians over rounds) and the step per added page: the price of a
row such as a clock's or the top leaf of an index by change number, written in every commit.

Writes only inside a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import apsw

PAGE_SIZES = (4096, 8192)


def open_file(path: Path, page_size: int, tables: int) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.execute("PRAGMA synchronous = NORMAL")
    for i in range(tables):
        conn.execute(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO t{i} VALUES (1, 0)")
    return conn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pages", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        conns = {size: open_file(Path(tmp) / f"p{size}.db", size, args.pages) for size in PAGE_SIZES}
        settings = [(size, k) for size in PAGE_SIZES for k in range(args.pages + 1)]
        times: dict[tuple[int, int], list[float]] = {setting: [] for setting in settings}
        for round_index in range(args.rounds):
            shift = round_index % len(settings)
            for size, k in settings[shift:] + settings[:shift]:
                conn = conns[size]
                step = "".join(f"UPDATE t{i} SET n = n + 1 WHERE id = 1;" for i in range(k))
                started = time.process_time()
                for _ in range(args.commits):
                    conn.execute("BEGIN IMMEDIATE")
                    if step:
                        conn.execute(step)
                    conn.execute("COMMIT")
                times[(size, k)].append((time.process_time() - started) / args.commits * 1e6)
        for conn in conns.values():
            conn.close()
    print(f"{args.commits:,} commits per setting and round, median of {args.rounds} rounds (CPU µs per commit)\n")
    print("| pages per commit | " + " | ".join(f"{size // 1024} KiB pages" for size in PAGE_SIZES) + " |")
    print("|---:|" + "---:|" * len(PAGE_SIZES))
    medians = {setting: statistics.median(values) for setting, values in times.items()}
    for k in range(args.pages + 1):
        print(f"| {k} | " + " | ".join(f"{medians[(size, k)]:.2f}" for size in PAGE_SIZES) + " |")
    steps = [f"{size // 1024} KiB {(medians[(size, args.pages)] - medians[(size, 0)]) / max(1, args.pages):.2f}"
             for size in PAGE_SIZES]
    print("\nPer added page (a one-row update and its frame), mean step from 0 to "
          f"{args.pages}: " + ", ".join(steps) + " µs")


if __name__ == "__main__":
    main()
