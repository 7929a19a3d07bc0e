"""An export line forged to carry a stamp and a seen summary it was never given (audit17, written down, not fixed).

An import takes a line's ``sync`` field when the line is the version its digest names, no stamp is more than 24
hours ahead, the stamp is not this store's, and (for ``--update``) the summary says the exporter had seen the version
held here (import_stamps.py). Every one of those is the file's own word. A file that claims a stamp of peer B made
after B's latest edit, and a summary holding that edit, is taken; the next sync then finds the imported version
"built on" B's edit and copies it over B's with no conflict copy and nothing in the trash: B's edit is on neither
store. The same line without the ``sync`` field is a conflict at that sync, and both versions are kept (the guard
case below). A strict xfail until the lead decides what an import may trust (docs/results/history.md, audit17)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from localmem import MemoryStore

REPO = Path(__file__).resolve().parent.parent
WEEKLY = "The deploy key rotates weekly (B's edit)"
FORGED = "The deploy key never rotates"


def cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOCALMEM_DAEMON": "0"}
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def exported_line(db: Path, folder: Path, memory_id: str) -> tuple[dict, dict]:
    path = folder / f"{db.stem}.jsonl"
    cli(db, "export", str(path), "--force")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return lines[0], next(line for line in lines if line.get("id") == memory_id)


def contents(db: Path) -> list[str]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(row[0] for row in conn.execute("SELECT content FROM memories"))
    finally:
        conn.close()


def b_edit_then_import(tmp_path: Path, forge: bool) -> tuple[Path, Path]:
    """A and B share a memory; B edits it; A imports (--update) a line holding another version of it, its ``sync``
    field forged to B's replica and a summary holding B's edit (``forge``) or left out; then A and B sync."""
    a, b, scratch = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "scratch.db"
    with MemoryStore(a, embedder="hash") as store:
        shared = store.store("The deploy key rotates monthly")
    with MemoryStore(b, embedder="hash") as store:
        store.store("B's own note")
    cli(a, "sync", str(b))
    with MemoryStore(b, embedder="hash") as store:
        store.update(shared, content=WEEKLY)
    scratch.write_bytes(a.read_bytes())
    with MemoryStore(scratch, embedder="hash") as store:
        store.update(shared, content=FORGED)
    header, line = exported_line(scratch, tmp_path, shared)
    b_stamp = exported_line(b, tmp_path, shared)[1]["sync"]["stamp"]
    a_stamp = exported_line(a, tmp_path, shared)[1]["sync"]["stamp"]
    if forge:
        replica = b_stamp.rsplit("-", 1)[1]
        line["sync"]["stamp"] = f"{int(time.time() * 1000) + 3_600_000:015d}-0000000000-{replica}"
        line["sync"]["seen"] = [[replica, b_stamp], [a_stamp.rsplit("-", 1)[1], a_stamp]]
    else:
        line.pop("sync")
    forged = tmp_path / "handed-over.jsonl"
    forged.write_text(json.dumps({**header, "memories": 1, "edges": 0}) + "\n" + json.dumps(line) + "\n")
    cli(a, "import", str(forged), "--update")
    cli(a, "sync", str(b))
    return a, b


def test_without_the_sync_field_both_versions_are_kept(tmp_path):
    for db in b_edit_then_import(tmp_path, forge=False):
        assert WEEKLY in contents(db) and FORGED in contents(db)


@pytest.mark.xfail(strict=True, reason="audit17, written down: an import trusts a file's stamps as a sync peer's")
def test_a_forged_stamp_does_not_make_b_s_edit_vanish(tmp_path):
    for db in b_edit_then_import(tmp_path, forge=True):
        assert WEEKLY in contents(db), contents(db)
