"""A sync killed at every one of its writes in turn, then run to the end (issue 42, item 3).

``test_sync_kill.py`` kills a real process at a random moment, so it finds a bad kill point only
now and then. Here the same kind of pair (conflicts, deletes, an edit kept over its delete,
edges) is put back byte for byte before each run, and the sync is stopped right before its k-th
commit on either store, for every k: a commit hook raising makes that transaction roll back and
the sync stop, as a process killed there would leave the files. The next sync must leave both
stores holding what an uninterrupted sync of the same pair holds, edges included.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide

SIDE = 3  # memories new on each side (one page each way)


class Killed(Exception):
    """Raised from a commit hook: that commit rolls back and the sync stops."""


class Clock:
    """A clock a millisecond a reading, so the pair is built with the same stamps every run."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> datetime:
        self.ticks += 1
        return datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=self.ticks)


def build(paths: tuple[Path, Path], clock: Clock) -> None:
    """Two stores that synced once and diverged: new memories on each side, conflicting edits
    (each kept as a conflict copy with its link), deletions (their edges' removal logged), and an
    edit the deleter never saw (kept over the delete, so it comes back with its edges)."""
    with MemoryStore(paths[0], embedder="hash", clock=clock) as a, \
            MemoryStore(paths[1], embedder="hash", clock=clock) as b:
        shared = [a.store(f"shared note {n} about the garden") for n in range(30)]
        for n in range(0, 20, 2):
            a.associate(shared[n], shared[n + 1], "RELATES_TO", 0.5)
        a.associate(shared[0], shared[24], "RELATES_TO", 0.7)  # edges the kept edit brings back
        a.associate(shared[25], shared[0], "EXEMPLIFIES", 0.7)
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=0)
        a.store_many([{"content": f"note {n} written on a"} for n in range(SIDE)])
        b.store_many([{"content": f"note {n} written on b"} for n in range(SIDE)])
        b.update(shared[0], content="shared note 0, edited on b")
        a.update(shared[0], content="shared note 0, edited on a")
        a.delete(shared[0])
        for n in range(1, 6):
            a.delete(shared[n])
        for n in range(6, 12):
            b.update(shared[n], content=f"shared note {n}, edited on b")
            a.update(shared[n], content=f"shared note {n}, edited on a")


def put_back(paths: tuple[Path, Path], saved: tuple[Path, Path]) -> None:
    """The saved bytes back into the same files (same inodes: not taken for copies)."""
    for path, copy in zip(paths, saved):
        with open(copy, "rb") as source, open(path, "r+b") as target:
            shutil.copyfileobj(source, target)
            target.truncate()
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def run_sync(paths: tuple[Path, Path], clock: Clock, kill_at: int | None = None) -> tuple[int, bool]:
    """Sync the pair; with ``kill_at``, stop it right before its ``kill_at``-th commit. Returns
    (commits counted, whether it was stopped)."""
    commits = [0]

    def hook() -> bool:
        commits[0] += 1
        if commits[0] == kill_at:
            raise Killed
        return False  # commit

    with MemoryStore(paths[0], embedder="hash", clock=clock) as a, \
            MemoryStore(paths[1], embedder="hash", clock=clock) as b:
        a.conn.set_commit_hook(hook)
        b.conn.set_commit_hook(hook)
        try:
            sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=100)
        except Killed:
            return commits[0], True
        finally:
            a.conn.set_commit_hook(None)
            b.conn.set_commit_hook(None)
    return commits[0], False


def held(path: Path) -> tuple[set[str], set[tuple[str, str, str]]]:
    """The memories' texts and the edges (by their ends' texts) a store holds."""
    with MemoryStore(path, embedder="hash", read_only=True) as store:
        texts = {row[0] for row in store.conn.execute("SELECT content FROM memories")}
        edges = set(store.conn.execute(
            "SELECT a.content, e.type, b.content FROM edges e JOIN memories a ON a.pk = e.src "
            "JOIN memories b ON b.pk = e.dst"))
    return texts, edges


def differences(name: str, got: tuple[set[str], set[tuple[str, str, str]]],
                want: tuple[set[str], set[tuple[str, str, str]]]) -> list[str]:
    """What a store holds that the uninterrupted pair does not, and what it lacks, readably."""
    lines = [f"{name} lacks memory {t!r}" for t in sorted(want[0] - got[0])]
    lines += [f"{name} has extra memory {t!r}" for t in sorted(got[0] - want[0])]
    lines += [f"{name} lacks edge {e}" for e in sorted(want[1] - got[1])]
    lines += [f"{name} has extra edge {e}" for e in sorted(got[1] - want[1])]
    return lines


def stopped_at_each_commit(paths: tuple[Path, Path], saved: tuple[Path, Path], commits: int,
                           whole: tuple[set[str], set[tuple[str, str, str]]]) -> list[str]:
    """From the saved files each time: a sync stopped before commit 1, 2, ..., ``commits``, then one run to the
    end; what each store then holds that the uninterrupted sync (``whole``) does not, per kill point."""
    failures: list[str] = []
    for kill_at in range(1, commits + 1):
        put_back(paths, saved)
        clock = Clock()
        assert run_sync(paths, clock, kill_at) == (kill_at, True)
        run_sync(paths, clock)
        stores = held(paths[0]), held(paths[1])
        wrong = differences("a", stores[0], whole) + differences("b", stores[1], whole)
        if wrong:
            failures.append(f"stopped before commit {kill_at} of {commits}: " + "; ".join(wrong))
    return failures


def test_a_sync_stopped_before_any_of_its_commits_converges_to_the_uninterrupted_outcome(tmp_path):
    paths = tmp_path / "a.db", tmp_path / "b.db"
    saved = tmp_path / "a.saved", tmp_path / "b.saved"
    build(paths, Clock())
    for path, copy in zip(paths, saved):
        shutil.copyfile(path, copy)  # the stores are closed: no WAL
    inodes = [os.stat(path).st_ino for path in paths]
    commits, stopped = run_sync(paths, Clock())
    assert not stopped
    whole = held(paths[0])
    assert held(paths[1]) == whole
    # The pair this test is about: six conflict copies, each linked to its winner, seven of the
    # ten first edges left (the others lost a memory to a delete), the two edges of the memory
    # kept over its delete, brought back with it, and a score of commits or more.
    assert sum(1 for edge in whole[1] if edge[1] == "INVALIDATED_BY") == 6 and len(whole[1]) == 15
    assert ("shared note 0, edited on b", "RELATES_TO", "shared note 24 about the garden") in whole[1]
    assert ("shared note 25 about the garden", "EXEMPLIFIES", "shared note 0, edited on b") in whole[1]
    assert commits >= 20
    failures = stopped_at_each_commit(paths, saved, commits, whole)
    assert [os.stat(path).st_ino for path in paths] == inodes
    assert not failures, "\n".join(failures)


def build_losers_on_the_first_side(paths: tuple[Path, Path], clock: Clock) -> None:
    """Two stores that synced once; then a edits three memories and b edits them after: b's edits win, and
    a's, read on the side whose changes go first, are the ones kept as conflict copies."""
    with MemoryStore(paths[0], embedder="hash", clock=clock) as a, \
            MemoryStore(paths[1], embedder="hash", clock=clock) as b:
        shared = [a.store(f"shared note {n} about the shed") for n in range(3)]
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"), allow_deletes=0)
        for n, memory in enumerate(shared):
            a.update(memory, content=f"shared note {n}, edited on a")
        for n, memory in enumerate(shared):
            b.update(memory, content=f"shared note {n}, edited on b")


def test_a_sync_stopped_between_a_conflicts_winner_and_its_copy_loses_neither_version(tmp_path):
    """The stateful model's seed 890804215 (100 steps), reduced: a sync wrote the winning version over the
    losing one on the store that held it, and was stopped before the conflict copy was written anywhere; the
    next sync found the two stores holding the same version, and the losing edit was on neither."""
    paths = tmp_path / "a.db", tmp_path / "b.db"
    saved = tmp_path / "a.saved", tmp_path / "b.saved"
    build_losers_on_the_first_side(paths, Clock())
    for path, copy in zip(paths, saved):
        shutil.copyfile(path, copy)
    commits, stopped = run_sync(paths, Clock())
    whole = held(paths[0])
    assert not stopped and held(paths[1]) == whole
    assert {f"shared note {n}, edited on {side}" for n in range(3) for side in "ab"} <= whole[0]
    failures = stopped_at_each_commit(paths, saved, commits, whole)
    assert not failures, "\n".join(failures)
