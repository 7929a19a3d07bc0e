"""``restore`` while another process writes loses no acknowledged commit (issue 12, item 5).

Found by ``benchmarks/attacks/attacks.py``: ``restore`` saved the current contents to
``<db>.pre-restore-<time>`` and only then took the write lock to copy the
backup in, so a memory another process committed in between was in neither
file (24 of 1,761 acknowledged writes over 6 restores). Every commit a writer
was told succeeded must now be in the restored file (made after the restore)
or in the copy the restore saved (made before it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import apsw

from localmem import MemoryStore
from tests.test_file_safety import environment, localmem

WRITER = """
import sys
from pathlib import Path
from localmem import MemoryStore
store = MemoryStore(sys.argv[1], embedder="hash")
stop, log, i = Path(sys.argv[2]), open(sys.argv[3], "w"), 0  # a file: a full pipe would stop the writer
while not stop.exists() and i < 20000:
    log.write(store.store(f"note {i}: committed while a restore runs") + "\\n")
    log.flush()
    i += 1
store.close()
"""


def ids(path: Path) -> set[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


def test_every_acknowledged_commit_survives_restores(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store_many([{"content": f"seed {i}"} for i in range(300)])
    assert localmem("--db", "w.db", "backup", "good.bak", cwd=tmp_path).returncode == 0
    stop = tmp_path / "stop"
    acks = tmp_path / "acknowledged.txt"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "w.db"), str(stop), str(acks)],
                              env=environment())
    saved = []
    try:
        time.sleep(1.0)  # the writer is committing
        for _ in range(4):
            result = localmem("--db", "w.db", "--json", "restore", "good.bak", cwd=tmp_path)
            assert result.returncode == 0, result.stderr
            saved.append(tmp_path / json.loads(result.stdout)["saved_previous"])
            time.sleep(0.2)
    finally:
        stop.touch()
        writer.wait(60)
    acknowledged = acks.read_text().split()
    assert len(acknowledged) > 100
    present = ids(tmp_path / "w.db").union(*(ids(copy) for copy in saved))
    missing = [memory_id for memory_id in acknowledged if memory_id not in present]
    assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged commits lost"
