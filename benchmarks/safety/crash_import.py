"""Crash safety: a bulk import killed with SIGKILL at random moments, the file checked after each kill.

Part 1 (``--kills``, default 20): an import through ``localmem.maintenance.importer.Importer``
(what ``localmem import`` runs) in a child process that prints each batch's
ids once ``store_many`` has returned, i.e. once the batch is committed and
acknowledged. The child is killed after a random number of new batches plus a
random fraction of a batch's write time; it restarts with ``skip_existing``
and resumes. After every kill: every acknowledged batch present, no partial
batch (the new rows are whole batches), ``doctor`` clean (memories, FTS,
vectors, tags, edges agree), the file opens and recalls.

Part 2 (``--cli-kills``, default 10): the real ``localmem import`` command,
killed at random times; the memory count must never go down, always be whole
batches, and ``doctor`` must stay clean.

    python benchmarks/safety/crash_import.py [--kills 20] [--cli-kills 10] [--memories 3000] [--no-write]
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
    run_cli_crash,
    run_crash,
    write_part,
)


def markdown(crash: dict, cli: dict, command: str, total: float) -> str:
    lines = [
        "### Crash safety: kill -9 during a bulk import",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {environment()}  ",
        f"Total run time: {total:.0f} s",
        "",
        f"Import file: {crash['memories_per_import']:,} memories with 384-dimension vectors, 2 tags each and "
        f"an edge every 10th memory; batches of {crash['batch']} (one transaction each). A whole import takes "
        f"{crash['full_import_s']} s here; when a file is complete it is started afresh.",
        "",
        "| figure | Importer, acknowledged batches | `localmem import` command |",
        "|---|---:|---:|",
        f"| SIGKILLs | {crash['kills']} ({crash['kills_mid_import']} before the import finished) | {cli['kills']} |",
        f"| batches acknowledged (memories) | {crash['acknowledged_total'] // crash['batch']:,} "
        f"({crash['acknowledged_total']:,}) | – |",
        f"| **acknowledged memories missing after a kill** | **{crash['missing_acknowledged']}** | – |",
        f"| memory count went down after a kill | – | **{cli['went_down']}** |",
        f"| **partial batches** (new rows not whole batches) | **{crash['partial_batches']}** | **{cli['partial_batches']}** |",
        f"| **`doctor` problems** after the kills (sum) | **{crash['doctor_problems']}** | **{cli['doctor_problems']}** |",
        f"| recall failures after a kill | {crash['recall_failures']} | {cli['recall_failures']} |",
        f"| kills where a batch had committed but was not yet acknowledged | "
        f"{crash['rounds_with_committed_unacknowledged_chunk']} | – |",
        f"| `integrity_check` at the end | {', '.join(crash['final_integrity'])} | {', '.join(cli['final_integrity'])} |",
        "",
        "Per kill (Importer): new batches waited for, then the extra delay → memories before → after:",
        "",
        ", ".join(f"{r['chunks_waited']}+{r['kill_delay_s'] * 1000:.0f}ms → {r['memories_before']}→{r['memories_after']}"
                  for r in crash["rounds"]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--cli-kills", type=int, default=10)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/results/history.md alone")
    args = parser.parse_args(argv)
    started = time.time()
    crash = run_crash(args.kills, memories=args.memories)
    cli = run_cli_crash(args.cli_kills, memories=args.memories)
    total = time.time() - started
    print(json.dumps({k: v for k, v in crash.items() if k != "rounds"}, indent=1))
    print(json.dumps({k: v for k, v in cli.items() if k != "rounds"}, indent=1))
    command = "cd /work/main && /work/venv/bin/python benchmarks/safety/crash_import.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    if not args.no_write:
        write_part("crash", markdown(crash, cli, command.strip(), total))
        print("wrote docs/results/history.md")
    bad = (crash["missing_acknowledged"] or crash["partial_batches"] or crash["doctor_problems"]
           or crash["recall_failures"] or cli["went_down"] or cli["partial_batches"] or cli["doctor_problems"]
           or cli["recall_failures"] or crash["final_integrity"] != ["ok"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
