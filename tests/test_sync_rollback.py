"""A store rolled back in place resends nothing it lost, unless the pair's token says so (issue 42, item 4).

A file-system or disk snapshot restored over a store's file keeps its identity and its recorded
home (the same file), so neither the identity renewal nor the byte-copy check sees it. Its peers'
sent marks then count changes it no longer holds. Each sync ends by drawing a token that both
stores keep for the pair; a rolled-back store holds an older one, and the next sync compares
everything, so what the rollback took away comes back.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide


def sync(a: Path, b: Path, **options):
    with MemoryStore(a, embedder="hash") as x, MemoryStore(b, embedder="hash") as y:
        return sync_stores(StoreSide(x, "x"), StoreSide(y, "y"), allow_deletes=100, **options)


def contents(path: Path) -> set[str]:
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        return {row[0] for row in store.conn.execute("SELECT content FROM memories")}


def write(path: Path, text: str) -> str:
    with MemoryStore(path, embedder="hash") as store:
        return store.store(text)


def roll_back_in_place(path: Path, saved: Path) -> None:
    """Put the saved bytes back into the same file (same inode: a snapshot rollback)."""
    inode = os.stat(path).st_ino
    with open(saved, "rb") as source, open(path, "r+b") as target:
        shutil.copyfileobj(source, target)
        target.truncate()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    assert os.stat(path).st_ino == inode


def test_a_store_rolled_back_in_place_gets_back_what_its_peer_had_sent(tmp_path):
    x, p, saved = tmp_path / "x.db", tmp_path / "p.db", tmp_path / "snapshot.db"
    write(x, "the first note, on x")
    write(p, "the first note, on p")
    sync(x, p)
    shutil.copyfile(x, saved)  # the snapshot (the store is closed: no WAL)
    write(p, "written on p after the snapshot")
    write(x, "written on x after the snapshot")
    first = sync(x, p)
    assert first.full_comparison is None
    roll_back_in_place(x, saved)
    assert "written on p after the snapshot" not in contents(x)
    again = sync(x, p)
    assert again.full_comparison is not None and "rolled back" in again.full_comparison
    assert contents(x) == contents(p) == {"the first note, on x", "the first note, on p",
                                          "written on p after the snapshot", "written on x after the snapshot"}
    assert sync(x, p).full_comparison is None  # the pair holds one token again


def test_a_dry_run_reports_the_full_comparison_and_draws_no_token(tmp_path):
    x, p = tmp_path / "x.db", tmp_path / "p.db"
    write(x, "a note on x")
    sync(x, p)
    with MemoryStore(x, embedder="hash") as store:
        store.conn.execute("UPDATE sync_pair_tokens SET token = ?", ("0" * 32,))  # as after a rollback
    with MemoryStore(x, embedder="hash", read_only=True) as a, MemoryStore(p, embedder="hash", read_only=True) as b:
        before = [a.conn.execute("SELECT * FROM sync_pair_tokens").fetchall(),
                  b.conn.execute("SELECT * FROM sync_pair_tokens").fetchall()]
        summary = sync_stores(StoreSide(a, "x"), StoreSide(b, "p"), dry_run=True)
        assert summary.full_comparison is not None
        assert before == [a.conn.execute("SELECT * FROM sync_pair_tokens").fetchall(),
                          b.conn.execute("SELECT * FROM sync_pair_tokens").fetchall()]
