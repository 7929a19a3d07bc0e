"""Issue 33 item 4: a long-running process's caches notice a restore.

A restore takes the file's change counters back to the backup's; once later
writes brought them past the values a process had cached, that process applied
only the newest changes on top of codes from before the restore and found 9 of
50 new memories by their own vector. Restores now write a new ``restore_token``
that the code index and the content cache are keyed on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from localmem import MemoryStore
from tests.test_file_safety import localmem

DIMS = 384


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def store_vectors(store: MemoryStore, label: str, vectors: np.ndarray) -> list[str]:
    return store.store_many([{"content": f"{label} {i}", "embedding": v.tolist()} for i, v in enumerate(vectors)])


def restore(tmp_path: Path) -> None:
    done = localmem("--db", "memory.db", "restore", "memory.bak", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_long_running_process_finds_memories_written_after_a_restore(tmp_path):
    rng = np.random.default_rng(33)
    db = tmp_path / "memory.db"
    process = MemoryStore(db, embedder="hash")  # the long-running process (a server's store)
    try:
        store_vectors(process, "before the backup", unit_vectors(rng, 1000))
        assert localmem("--db", "memory.db", "backup", "memory.bak", cwd=tmp_path).returncode == 0
        store_vectors(process, "after the backup", unit_vectors(rng, 100))
        process.recall(embedding=unit_vectors(rng, 1)[0].tolist(), limit=1)  # its code cache is current
        seen = process.backend.code_index.describe()["seq"]
        restore(tmp_path)
        vectors = unit_vectors(rng, 150)
        with MemoryStore(db, embedder="hash") as other:  # another process writes after the restore
            new = store_vectors(other, "written after the restore", vectors)
        found = [process.recall(embedding=v.tolist(), limit=1)["results"][0]["id"] == memory_id
                 for memory_id, v in zip(new, vectors)]
        assert process.backend.code_index.describe()["seq"] > seen  # the counter went past the cached one
        assert sum(found) == len(new), f"{sum(found)} of {len(new)} found by their own vector"
    finally:
        process.close()


def test_the_content_cache_starts_over_after_a_restore(tmp_path):
    db = tmp_path / "memory.db"
    process = MemoryStore(db, embedder="hash")
    try:
        process.store_many([{"content": f"seed memory {i}"} for i in range(5)])
        assert localmem("--db", "memory.db", "backup", "memory.bak", cwd=tmp_path).returncode == 0
        process.store_many([{"content": f"written before the restore {i}"} for i in range(3)])
        cache = process.backend.content_cache()
        cache["planted"] = "derived from the contents before the restore"
        restore(tmp_path)
        with MemoryStore(db, embedder="hash") as other:  # the same number of writes: the same counter
            other.store_many([{"content": f"written after the restore {i}"} for i in range(3)])
        assert "planted" not in process.backend.content_cache()
    finally:
        process.close()
