"""A database on read-only media can be read; only writes fail, and they say why (issue 12).

The media is a real read-only file system: a tmpfs mounted for the test and remounted
read-only (as root a chmod'ed directory would not stop anything). Without the rights to
mount, the tests that need it are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from localmem import ConfigError, MemoryStore, StorageError

REPO = Path(__file__).resolve().parents[1]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LOCALMEM_") or k in ("LOCALMEM_CACHE_DIR", "LOCALMEM_ONNX_EXPORT", "LOCALMEM_DAEMON")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def localmem(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m localmem --db DB ARGS`` (the embedder is the one the file recorded)."""
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args],
                          capture_output=True, text=True, encoding="utf-8", env=environment(),
                          timeout=120, check=False)


class Media:
    """A tmpfs mounted at ``path``; ``seal()`` remounts it read-only."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def seal(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True, capture_output=True)
        probe = self.path / "probe"
        with pytest.raises(OSError):  # even root cannot write now
            probe.write_text("x")


@pytest.fixture
def media(tmp_path: Path) -> Iterator[Media]:
    mount_point = tmp_path / "media"
    mount_point.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make read-only media")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(mount_point)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to make read-only media: {made.stderr.strip()}")
    try:
        yield Media(mount_point)
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def fill(path: Path) -> dict[str, str]:
    with MemoryStore(path, embedder="hash") as store:
        first = store.store("Chose PostgreSQL for the orchard project", tags=["project:orchard"])
        second = store.store("The orchard has forty apple trees", tags=["garden"])
        store.associate(first, second, "RELATES_TO", 0.5)
    return {"first": first, "second": second}


def test_read_commands_work_on_read_only_media(tmp_path: Path, media: Media) -> None:
    db = media.path / "memory.db"
    ids = fill(db)
    media.seal()
    stats = localmem(db, "--json", "stats")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["memory_count"] == 2
    recalled = localmem(db, "--json", "recall", "apple trees")
    assert recalled.returncode == 0, recalled.stderr
    assert ids["second"] in [r["id"] for r in json.loads(recalled.stdout)["results"]]
    got = localmem(db, "get", ids["first"])
    assert got.returncode == 0 and "PostgreSQL" in got.stdout, got.stderr
    assert localmem(db, "by-tag", "garden").returncode == 0
    exported = localmem(db, "export", str(tmp_path / "out.jsonl"))
    assert exported.returncode == 0, exported.stderr
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert kinds.count("memory") == 2 and kinds.count("edge") == 1
    checked = localmem(db, "doctor")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    backed = localmem(db, "backup", str(tmp_path / "copy.db"))
    assert backed.returncode == 0, backed.stderr
    with MemoryStore(tmp_path / "copy.db", embedder="hash") as copy:
        assert copy.health()["memory_count"] == 2


def test_writes_on_read_only_media_fail_clearly(media: Media) -> None:
    db = media.path / "memory.db"
    ids = fill(db)
    media.seal()
    for args in (["store", "a new memory"], ["delete", ids["first"]], ["doctor", "--repair"]):
        result = localmem(db, *args)
        assert result.returncode == 1, result.stdout
        assert result.stderr.startswith("error: ") and "read-only" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_memory_store_read_only(media: Media) -> None:
    db = media.path / "memory.db"
    ids = fill(db)
    media.seal()
    with pytest.raises(ConfigError, match="read_only=True"):
        MemoryStore(db, embedder="hash")  # a writable open says how to open it instead
    with MemoryStore(db, embedder="hash", read_only=True) as store:
        assert store.get(ids["first"])["content"].startswith("Chose PostgreSQL")
        assert store.recall("orchard apple", limit=5)["count"] >= 1
        assert store.health()["memory_count"] == 2
        assert store.by_tag(["garden"])["count"] == 1
        with pytest.raises(StorageError, match="read-only"):
            store.store("cannot be written")
        with pytest.raises(StorageError, match="read-only"):
            store.delete(ids["first"])
        assert store.health()["memory_count"] == 2


def test_read_only_media_with_a_log_still_shows_every_commit(media: Media) -> None:
    """A copy taken from a running system: the commits are still in its -wal, beside a -shm."""
    live, frozen, no_index = media.path / "live", media.path / "frozen", media.path / "no-shm"
    for folder in (live, frozen, no_index):
        folder.mkdir()
    holder = MemoryStore(live / "m.db", embedder="hash")
    try:
        holder.store_many([{"content": f"memory {i} kept in the log"} for i in range(20)])
        assert sorted(p.name for p in live.iterdir()) == ["m.db", "m.db-shm", "m.db-wal"]
        for name in ("m.db", "m.db-shm", "m.db-wal"):
            shutil.copyfile(live / name, frozen / name)
        for name in ("m.db", "m.db-wal"):
            shutil.copyfile(live / name, no_index / name)
    finally:
        holder.close()
    media.seal()
    with MemoryStore(frozen / "m.db", embedder="hash", read_only=True) as store:
        assert store.health()["memory_count"] == 20
    stats = localmem(frozen / "m.db", "--json", "stats")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["memory_count"] == 20
    # Without a -shm file (which read-only media cannot get) the log cannot be read: that is
    # an error naming the cause, never a silently older view of the data.
    with pytest.raises((ConfigError, StorageError), match="-wal"):
        MemoryStore(no_index / "m.db", embedder="hash", read_only=True)


def test_read_only_open_changes_nothing(tmp_path: Path) -> None:
    """On writable media a read-only store writes nothing, and still sees other writers."""
    path = tmp_path / "m.db"
    ids = fill(path)
    with MemoryStore(path, embedder="hash") as writer, \
            MemoryStore(path, embedder="hash", read_only=True) as reader:
        assert reader.health()["memory_count"] == 2
        writer.store("written by another connection")
        assert reader.health()["memory_count"] == 3
        with pytest.raises(StorageError, match="read-only"):
            reader.update(ids["first"], importance=0.9)
    # A backup (a rollback-journal file) opened read-only is left byte for byte as it was.
    backup = tmp_path / "b.db"
    assert localmem(path, "backup", str(backup)).returncode == 0
    before = backup.read_bytes()
    with MemoryStore(backup, embedder="hash", read_only=True) as store:
        assert store.health()["memory_count"] == 3
    assert backup.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.db")) == ["b.db"]
    with pytest.raises(ConfigError, match="no database"):
        MemoryStore(tmp_path / "missing.db", embedder="hash", read_only=True)
    assert not (tmp_path / "missing.db").exists()
