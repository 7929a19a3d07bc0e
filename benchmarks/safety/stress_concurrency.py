"""Concurrency stress: 4 writer + 4 reader processes + the HTTP server under load on one file.

Runs for ``--duration`` seconds (default 150), then checks that every
acknowledged write is present and intact (content, tags, metadata, the last
acknowledged update of each memory and of each shared memory's fields, edges,
deletes), that nothing is duplicated, that ``doctor`` is clean and the file
passes ``integrity_check``. First it compares lock strategies with 4 processes
calling ``store()``, ``--lock-rounds`` rounds of ``--lock-seconds`` each. Figures go to
``docs/results/history.md`` (reliability section, concurrency part).

    python benchmarks/safety/stress_concurrency.py [--duration 150] [--lock-seconds 5] [--lock-rounds 3] [--no-write]

Exit status 1 if any write was lost, any "database is locked" reached a
caller, or any other error occurred.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.reliability_harness import (
    environment,
    mib,
    run_concurrency,
    run_lock_comparison,
    write_part,
)


def markdown(figures: dict, locks: list[dict], command: str, total: float) -> str:
    v = figures["verify"]
    lines = [
        "### Concurrency: 4 writers + 4 readers + HTTP server on one file",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {environment()}  ",
        f"Total run time: {total:.0f} s",
        "",
        f"Run of {figures['duration_s']} s: 4 writer processes (`store` 50%, `store_many` of 2–20 10%, "
        "`update` of their own field on 8 shared memories 15% — importance, tags, metadata or "
        "relevance_score, one field per writer —, `update` of their own memories 10%, `associate` 8%, "
        "`delete` 7%), 4 reader processes (`recall` 60% — a quarter tag-scoped, a fifth with "
        "`expand_relations` —, `by_tag` 15%, `get` + `related` 15%, `health` 10%), and `localmem serve` "
        "(its own process, token-protected) driven by 2 HTTP client threads (`POST /memory`, "
        "`POST /memory/batch`, `GET /recall`, `GET /memory/{id}`, `PATCH`). Hash embedder, "
        f"{v['memories_in_file']:,} memories at the end. Each process has its own connection, as "
        "separate programs would.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| writer operations | {figures['writer_ops']:,} |",
        f"| reader operations | {figures['reader_ops']:,} |",
        f"| HTTP requests (statuses) | {figures['http_requests']:,} "
        f"({', '.join(f'{k}: {n:,}' for k, n in figures['http_statuses'].items())}) |",
        f"| \"database is locked\" / busy errors reaching a caller | **{figures['locked_errors']}** |",
        f"| other errors | **{figures['other_errors']}** |",
        f"| acknowledged stores / updates / shared-field updates / edges / deletes | "
        f"{v['acknowledged_stores']:,} / {v['acknowledged_updates']:,} / {v['acknowledged_shared_updates']:,} / "
        f"{v['acknowledged_edges']:,} / {v['acknowledged_deletes']:,} |",
        f"| acknowledged writes missing or altered (lost) | **{v['missing'] + v['altered']}** |",
        f"| shared-field updates overwritten by another writer | **{v['lost_shared_updates']}** |",
        f"| acknowledged edges missing; deleted memories back | {v['missing_edges']}; {v['resurrected_deletes']} |",
        f"| duplicated memories; rows nobody acknowledged | {v['duplicated_contents']}; {v['unacknowledged_extra']} |",
        f"| `doctor` problems; `integrity_check` | {len(v['doctor_problems'])}; {', '.join(v['integrity'])} |",
        f"| `health()` reporting drift during the run | {figures['health_drift_seen']} |",
        f"| write-lock wait (`BEGIN IMMEDIATE`), writers: max / p99 | {figures['writer_lock_wait']['max_ms']:.0f} / "
        f"{figures['writer_lock_wait']['p99_ms']:.0f} ms |",
        f"| write-lock hold, writers: max / p99 | {figures['writer_lock_hold']['max_ms']:.0f} / "
        f"{figures['writer_lock_hold']['p99_ms']:.0f} ms |",
        f"| recall's `last_accessed` write, readers: lock wait max / p99; hold max | "
        f"{figures['reader_touch_lock_wait']['max_ms']:.0f} / {figures['reader_touch_lock_wait']['p99_ms']:.0f} ms; "
        f"{figures['reader_touch_lock_hold']['max_ms']:.1f} ms |",
        f"| `last_accessed` writes skipped (lock not free within 0.5 s) | {figures['touch_skipped']} |",
        f"| recall latency p50 / p99 / max (2 CPUs shared by ~11 busy processes) | "
        f"{figures['recall_latency']['p50_ms']:.0f} / {figures['recall_latency']['p99_ms']:.0f} / "
        f"{figures['recall_latency']['max_ms']:.0f} ms |",
        f"| writer call latency p99 / max | {figures['writer_op_latency']['p99_ms']:.0f} / "
        f"{figures['writer_op_latency']['max_ms']:.0f} ms |",
        f"| HTTP request latency p99 / max | {figures['http_latency']['p99_ms']:.0f} / "
        f"{figures['http_latency']['max_ms']:.0f} ms |",
        f"| checkpoints run (after commits) / of which TRUNCATE; time max / p99 | {figures['checkpoints_run']:,} / "
        f"{figures['wal_truncations']:,}; {figures['checkpoint_time']['max_ms']:.0f} / "
        f"{figures['checkpoint_time']['p99_ms']:.0f} ms |",
        f"| **largest WAL file seen** (polled every 20 ms, {figures['wal_samples']:,} samples) | "
        f"**{mib(figures['max_wal_bytes'])}** (bound: 40 MiB + largest transaction) |",
        f"| largest database file; WAL at the end | {mib(figures['max_db_bytes'])}; {mib(figures['final_wal_bytes'])} |",
        f"| **data lost** | **{v['data_lost']}** |",
        "",
        "Lock wait is the time `BEGIN IMMEDIATE` waited for the write lock; hold is from then to the end of "
        "`COMMIT`, without the checkpoint the WAL hook runs after the lock is released (timed apart). "
        "A \"rows nobody acknowledged\" count above 0 would be a write that committed but whose caller got an error.",
        "",
        f"Lock strategies compared: {locks[0]['processes']} processes calling `store()` in a loop, "
        f"{locks[0]['rounds']} rounds of {locks[0]['seconds']:.0f} s per strategy, interleaved, a fresh file "
        "each; the old strategy is rebuilt by patching the current code. Stored and errors are summed over "
        "the rounds, p99 is the median of the rounds' p99s, max the worst call:",
        "",
        "| strategy | stored | \"database is locked\" errors | call latency p99 | max | per round: stored, p99, max |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in locks:
        rounds = "; ".join(f"{r['stored']:,}, {r['p99_ms']:.0f}, {r['max_ms']:.0f} ms" for r in row["per_round"])
        lines.append(f"| {row['strategy']} | {row['stored']:,} | {row['locked_errors']:,} | "
                     f"{row['p99_ms']:.0f} ms | {row['max_ms']:.0f} ms | {rounds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=150.0, help="seconds of load (default 150)")
    parser.add_argument("--lock-seconds", type=float, default=5.0,
                        help="seconds per lock strategy and round in the comparison (default 5; 0 skips it)")
    parser.add_argument("--lock-rounds", type=int, default=3, help="rounds of the comparison (default 3)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/results/history.md alone")
    args = parser.parse_args(argv)
    started = time.time()
    locks = run_lock_comparison(args.lock_seconds, rounds=args.lock_rounds) if args.lock_seconds > 0 else []
    for row in locks:
        print(json.dumps(row))
    figures = run_concurrency(args.duration)
    print(json.dumps({k: v for k, v in figures.items() if k != "server_stderr_tail"}, indent=1))
    total = time.time() - started
    command = "cd /work/main && /work/venv/bin/python benchmarks/safety/stress_concurrency.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    if not args.no_write and locks:
        write_part("concurrency", markdown(figures, locks, command.strip(), total))
        print("wrote docs/results/history.md")
    v = figures["verify"]
    failed = (v["data_lost"] or figures["locked_errors"] or figures["other_errors"]
              or figures["crashed_workers"] or v["doctor_problems"] or v["integrity"] != ["ok"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
