"""Resource faults and security: runs their tests and records every check's outcome.

``tests/test_resource_faults.py`` (full disk via ``max_page_count``, read-only file,
interrupted and killed migrations, concurrent first open) and ``tests/test_security.py``
(the auth matrix over every route of the app's route table, constant-time comparison,
tokens in logs, CORS, path tricks, file modes under four umasks, online backup while a
writer runs, restore), the regression tests of issue 12 ("Nothing lost, no one in", one
file per feature, listed in ``ISSUE_12`` with the items they cover), plus the auth / CORS /
token tests of ``tests/test_http.py`` and ``tests/test_recall_v1_http.py`` (scoped tokens,
the uniform 404). Results go to ``docs/results/history.md`` (reliability section, faults part).

    python benchmarks/safety/faults_security.py [--no-write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.reliability_harness import environment, write_part

# Issue 12's regression tests and the items of the issue each covers.
ISSUE_12 = {
    "tests/test_file_safety.py": "1 database files as destinations, 5 doctor/restore under a writer, "
                                 "10 modes under umask 000, 11 leftovers/collisions/errors/foreign files, "
                                 "LOCALMEM_SYNCHRONOUS",
    "tests/test_restore_under_writers.py": "5 restore loses no acknowledged commit",
    "tests/test_http_hardening.py": "2 Host/Origin/content type, 3 scoped tokens, 7 bad JSON bodies, "
                                    "11 /health per caller and slow clients",
    "tests/test_hostile_values.py": "4 hostile vectors, 6 MCP answers, 7 surrogates, huge numbers, deep JSON",
    "tests/test_mcp_deep_requests.py": "6 a request nested too deep is answered under its id",
    "tests/test_hostile_field_names.py": "7 a field name with a lone surrogate is a 4xx naming it",
    "tests/test_import_safety.py": "8 imports change no existing data",
    "tests/test_export_header.py": "8 an import refuses another embedder's vectors and cut files",
    "tests/test_read_only.py": "9 read-only media",
    "tests/test_destination_errors.py": "11 an unwritable destination is named as given",
}
TARGETS = ["tests/test_resource_faults.py", "tests/test_security.py", *ISSUE_12]
RELATED = ["tests/test_http.py", "tests/test_recall_v1_http.py"]
RELATED_FILTER = "auth or token or cors or options or scoped or context or 404 or loopback or refuse"


def run_pytest(targets: list[str], extra: list[str]) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets, *extra,
                        f"--junitxml={report}"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True)
        cases = []
        for case in ET.parse(report).getroot().iter("testcase"):
            outcome, reason = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "FAILED"
                elif child.tag == "skipped":
                    outcome, reason = "skipped", child.get("message", "")
            cases.append({"file": case.get("classname", "").split(".")[-1], "name": case.get("name"),
                          "time": float(case.get("time", 0)), "outcome": outcome, "reason": reason})
        return cases


def matrix_size() -> tuple[int, int]:
    from localmem import MemoryStore
    from localmem.http.app import create_app
    from tests import test_security

    with MemoryStore(":memory:", embedder="hash") as store:
        ids = (store.store("a"), store.store("b"))
        app = create_app(store, token="x", tokens={"y": ["work"]})
        return len(test_security.concrete_requests(app, ids)), len(test_security.CREDENTIALS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    start = time.time()
    mine = run_pytest(TARGETS, [])
    related = run_pytest(RELATED, ["-k", RELATED_FILTER])
    elapsed = time.time() - start
    routes, credentials = matrix_size()
    failed = [c for c in mine + related if c["outcome"] == "FAILED"]
    skipped = sorted({f"`{c['file']}::{str(c['name']).split('[')[0]}` ({c['reason'] or 'no reason given'})"
                      for c in mine + related if c["outcome"] == "skipped"})
    for case in mine + related:
        print(f"{case['outcome']:8} {case['file']}::{case['name']} ({case['time']:.2f} s)")
    command = "python benchmarks/safety/faults_security.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    lines = [
        "### Resource faults and security",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {environment()}  ",
        f"Total run time: {elapsed:.0f} s",
        "",
        f"Checks run: {len(mine)} in `{'`, `'.join(TARGETS)}` and {len(related)} auth / CORS / token / "
        f"context tests in `{'`, `'.join(RELATED)}`; **{len(failed)} failed**, "
        f"{sum(c['outcome'] == 'skipped' for c in mine + related)} skipped"
        f"{': ' + '; '.join(skipped) if skipped else ''}. The auth matrix covers "
        f"{routes} (route, method) pairs read from the app's route table × {credentials} bad credentials, "
        "plus the scoped token and the admin token on each: **0 answers without a valid token** "
        "(only `/health` is open, without the file path).",
        "",
        "What the fault tests establish: a full disk (`PRAGMA max_page_count`) makes `store_many`, `update` "
        "and `supersede` fail with `StorageError` 507 \"The disk is full …; nothing was changed\" (HTTP 507), "
        "every table byte-for-byte as before, `integrity_check` ok, and the same call succeeds once there is "
        "room; a read-only file answers `recall`, `get`, `health` and `doctor`, refuses every write with "
        "`StorageError` 503 \"The database file is read-only\" (CLI: `error: …`, exit 1) and its bytes do not "
        "change; a migration step that fails halfway or is killed with SIGKILL leaves the file at the "
        "previous schema version with its data, integrity ok, and the next open completes the migration; "
        "six processes opening a new file at the same moment migrate it once.",
        "",
        f"Related tests in `{'`, `'.join(RELATED)}` (selected with `-k \"{RELATED_FILTER}\"`): "
        f"{sum(c['outcome'] == 'passed' for c in related)} passed of {len(related)}.",
        "",
        "Issue 12's regression tests (each failed on the code before its fix; the attacks themselves are "
        "replayed at scale by `benchmarks/attacks/attacks.py`, below):",
        "",
        "| file | issue 12 items | checks | failed | s |",
        "|---|---|---:|---:|---:|",
        *[f"| `{path}` | {items} | {len(cases)} | {sum(c['outcome'] == 'FAILED' for c in cases)} | "
          f"{sum(float(c['time']) for c in cases):.1f} |"
          for path, items in ISSUE_12.items()
          for cases in [[c for c in mine if c["file"] == Path(path).stem]]],
        "",
        "| check | outcome | s |",
        "|---|---|---:|",
    ]
    grouped: dict[str, list[dict[str, object]]] = {}
    for case in mine:  # parametrised cases on one row
        grouped.setdefault(f"{case['file']}::{str(case['name']).split('[')[0]}", []).append(case)
    for name, cases in grouped.items():
        outcomes = sorted({str(c["outcome"]) for c in cases})
        label = f"`{name}`" + (f" ({len(cases)} cases)" if len(cases) > 1 else "")
        lines.append(f"| {label} | {', '.join(outcomes)} | {sum(float(c['time']) for c in cases):.2f} |")
    if not args.no_write:
        write_part("faults", "\n".join(lines))
        print("wrote docs/results/history.md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
