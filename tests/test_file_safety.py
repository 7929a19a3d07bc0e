"""The database file and its companions: nothing lost, nothing left behind (issue 12).

* ``backup``, ``restore`` and ``export`` refuse to write over the database or one of its
  ``-wal``/``-shm``/``-journal`` files, however the path is spelled; ``restore`` refuses such a
  source, and no command opens another database's companion as a database.
* ``doctor`` checks one consistent snapshot: no false corruption while another process writes.
* Files and directories are private under ``umask 000``; a refused foreign file is untouched;
  failed backups leave no temporary file; restores never collide; errors stay short; an
  export is synced before it is reported.
* ``LOCALMEM_SYNCHRONOUS`` chooses NORMAL (default) or FULL.

Each test drives the real CLI (``python -m localmem``) or ``MemoryStore``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import apsw
import pytest

from localmem import ConfigError, MemoryStore
from localmem.maintenance import doctor

REPO = Path(__file__).resolve().parents[1]
MEMORIES = 200


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LOCALMEM_") or k in ("LOCALMEM_CACHE_DIR", "LOCALMEM_ONNX_EXPORT", "LOCALMEM_DAEMON")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def localmem(*args: str, cwd: Path, umask: int | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m localmem --embedder hash ARGS`` in ``cwd``."""
    preexec = (lambda: os.umask(umask)) if umask is not None else None  # noqa: E731
    return subprocess.run([sys.executable, "-m", "localmem", "--embedder", "hash", *args], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", env=env or environment(),
                          timeout=120, check=False, preexec_fn=preexec)


def memory_count(path: Path) -> int:
    with MemoryStore(path, embedder="hash") as store:
        return store.health()["memory_count"]


def assert_intact(tmp_path: Path, count: int = MEMORIES) -> None:
    """Every committed memory is there and a fresh ``doctor`` finds nothing wrong."""
    assert memory_count(tmp_path / "w.db") == count
    checked = localmem("--db", "w.db", "doctor", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode != 0, result.stdout
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.fixture
def live(tmp_path: Path) -> Iterator[MemoryStore]:
    """``w.db`` with 200 memories still in the WAL, held open as a running server would."""
    holder = MemoryStore(tmp_path / "w.db", embedder="hash")
    for start in range(0, MEMORIES, 50):
        holder.store_many([{"content": f"memory {i} about the garden and its apples"}
                           for i in range(start, start + 50)])
    (tmp_path / "sub").mkdir()
    try:
        yield holder
    finally:
        holder.close()


# -- 1. the database and its companions are never a destination ------------------------------


def spellings(tmp_path: Path) -> list[str]:
    """The database and its companions, named relatively, through ``..``, a symlink, absolutely."""
    (tmp_path / "link-to-journal").symlink_to("w.db-journal")  # dangling until SQLite makes one
    (tmp_path / "sub" / "link-to-db").symlink_to(tmp_path / "w.db")
    return ["w.db-wal", "sub/../w.db-shm", "link-to-journal", str(tmp_path / "sub" / "link-to-db"),
            str(tmp_path / "w.db-wal")]


def test_backup_refuses_the_database_and_its_companions(tmp_path: Path, live: MemoryStore) -> None:
    for dest in spellings(tmp_path):
        result = localmem("--db", "w.db", "backup", dest, "--force", cwd=tmp_path)
        assert_refused(result, "w.db")
    live.close()
    assert not (tmp_path / "w.db-journal").exists()
    assert_intact(tmp_path)


def test_export_refuses_the_database_and_companions(tmp_path: Path, live: MemoryStore) -> None:
    with MemoryStore(tmp_path / "other.db", embedder="hash") as other:
        other.store("another database's memory")
    for dest in [*spellings(tmp_path), "w.db", "other.db-journal", "sub/../other.db-wal"]:
        result = localmem("--db", "w.db", "export", dest, cwd=tmp_path)
        assert_refused(result)
    live.close()
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    assert not (tmp_path / "other.db-journal").exists()
    assert_intact(tmp_path)
    assert memory_count(tmp_path / "other.db") == 1


def test_restore_refuses_a_companion_as_source_or_target(tmp_path: Path, live: MemoryStore) -> None:
    made = localmem("--db", "w.db", "backup", "good.bak", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    live.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # an empty -wal looks like a new file
    assert (tmp_path / "w.db-wal").stat().st_size == 0
    (tmp_path / "sub" / "link-to-db").symlink_to(tmp_path / "w.db")
    for source in ("w.db-wal", "sub/../w.db-shm", "sub/link-to-db"):
        assert_refused(localmem("--db", "w.db", "restore", source, cwd=tmp_path))
    for target in ("w.db-wal", "sub/../w.db-shm", "w.db-journal"):
        assert_refused(localmem("--db", target, "restore", "good.bak", cwd=tmp_path), "w.db")
    # Nothing else opens a companion as a database either.
    assert_refused(localmem("--db", "w.db-wal", "store", "into the log", cwd=tmp_path), "w.db")
    assert (tmp_path / "w.db-wal").stat().st_size == 0
    assert not (tmp_path / "w.db-journal").exists()
    live.close()
    assert_intact(tmp_path)


# -- 5. doctor checks one snapshot --------------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from localmem import MemoryStore
store = MemoryStore(sys.argv[1], embedder="hash")
stop, deadline, i = Path(sys.argv[2]), time.monotonic() + 60, 0
while not stop.exists() and time.monotonic() < deadline:
    store.store(f"note {i}: the writer keeps committing words like apple{i % 13} pear{i % 7}",
                tags=[f"t{i % 5}"])
    i += 1
store.close()
"""


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Path]:
    """A process committing one memory after another into ``w.db`` until the test ends."""
    path = tmp_path / "w.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store_many([{"content": f"seed {i} apple pear"} for i in range(50)])
    stop = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop)], env=environment())
    try:
        yield path
    finally:
        stop.touch()
        proc.wait(timeout=60)


def wait_for_commits(store: MemoryStore, count: int, commits: int = 6) -> int:
    """Wait until the writer has committed ``commits`` more memories (and FTS5 merged segments)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        if now >= count + commits:
            return now
        time.sleep(0.005)
    raise AssertionError("the writer process stopped committing")


def test_doctor_finds_no_false_corruption_while_another_process_writes(writer: Path) -> None:
    """A long-lived store (a server) runs recall and doctor while a writer commits.

    FTS5's integrity check reuses the index structure the connection cached at its last
    full-text read, from an older snapshot; every report here would be a false alarm.
    """
    store = MemoryStore(writer, embedder="hash")
    try:
        count = store.health()["memory_count"]
        false_reports: list[Any] = []
        for _ in range(20):
            store.recall("apple pear", limit=5)  # reads the full-text index
            count = wait_for_commits(store, count)
            found = doctor.problems(doctor.check(store))
            false_reports += [c.as_dict() for c in found]
        assert false_reports == []
    finally:
        store.close()


def test_restore_under_a_writing_process_reports_no_problem(tmp_path: Path, writer: Path) -> None:
    made = localmem("--db", "w.db", "backup", "good.bak", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    for _ in range(4):
        restored = localmem("--db", "w.db", "restore", "good.bak", cwd=tmp_path)
        assert restored.returncode == 0, restored.stdout + restored.stderr
        assert "problem" not in restored.stdout


# -- 10. private files under umask 000 ----------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_export_creates_private_directories_under_umask_000(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("exported under a permissive umask")
    result = localmem("--db", "w.db", "export", "new/dir/e.jsonl", cwd=tmp_path, umask=0)
    assert result.returncode == 0, result.stderr
    assert mode(tmp_path / "new") == 0o700
    assert mode(tmp_path / "new" / "dir") == 0o700
    assert mode(tmp_path / "new" / "dir" / "e.jsonl") == 0o600


def test_an_existing_empty_file_becomes_a_private_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    previous = os.umask(0)
    try:
        path.touch(mode=0o666)
        assert mode(path) == 0o666
        with MemoryStore(path, embedder="hash") as store:
            store.store("the first memory of a file the user made")
            modes = {p.name: mode(p) for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))}
    finally:
        os.umask(previous)
    assert modes == {"empty.db": 0o600, "empty.db-wal": 0o600, "empty.db-shm": 0o600}


# -- 11. what a failure leaves behind -------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp"))


def test_a_failed_backup_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    result = localmem("--db", "notes.txt", "backup", "out.db", cwd=tmp_path)
    assert_refused(result)
    assert leftovers(tmp_path) == [] and not (tmp_path / "out.db").exists()


def test_backup_into_a_directory_writes_inside_it_and_replaces_nothing(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("backed up")
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir" / "keep.txt").write_text("mine")
    result = localmem("--db", "w.db", "backup", "adir", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    made = [p.name for p in (tmp_path / "adir").iterdir() if p.name != "keep.txt"]
    assert len(made) == 1 and made[0].startswith("w-backup-") and made[0].endswith(".db")
    assert (tmp_path / "adir" / "keep.txt").read_text() == "mine"
    assert memory_count(tmp_path / "adir" / made[0]) == 1
    assert leftovers(tmp_path) == []


def test_restores_in_the_same_second_keep_every_previous_copy(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("the only memory")
    made = localmem("--db", "w.db", "backup", "good.bak", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    # Occupy the names of the next minute, as restores made a moment ago would have.
    now = datetime.now(timezone.utc)
    taken = []
    for second in range(-1, 60):
        stamp = (now + timedelta(seconds=second)).strftime("%Y%m%dT%H%M%SZ")
        taken.append(tmp_path / f"w.db.pre-restore-{stamp}")
        taken[-1].write_bytes(b"an earlier copy")
    saved = []
    for _ in range(2):
        result = localmem("--db", "w.db", "--json", "restore", "good.bak", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        saved.append(tmp_path / json.loads(result.stdout)["saved_previous"])
    assert saved[0] != saved[1] and all(p.is_file() for p in saved)
    assert all(p.read_bytes() == b"an earlier copy" for p in taken)
    assert memory_count(saved[1]) == 1


def test_a_damaged_backup_is_refused_in_a_few_lines(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store_many([{"content": f"memory {i} with some words"} for i in range(300)])
    assert localmem("--db", "w.db", "backup", "good.bak", cwd=tmp_path).returncode == 0
    data = bytearray((tmp_path / "good.bak").read_bytes())
    for page in range(2, len(data) // 8192, 2):  # scribble over every other page's cells
        data[page * 8192 + 100:page * 8192 + 4000] = b"\x5a" * 3900
    (tmp_path / "bad.bak").write_bytes(bytes(data))
    before = (tmp_path / "w.db").read_bytes()
    result = localmem("--db", "w.db", "restore", "bad.bak", cwd=tmp_path)
    assert_refused(result, "bad.bak")
    assert len(result.stderr.splitlines()) <= 3, result.stderr
    assert (tmp_path / "w.db").read_bytes() == before


def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (9.5)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="localmem"):
        MemoryStore(path, embedder="hash")
    for command in (["stats"], ["backup", "f.bak"], ["store", "x"]):
        assert_refused(localmem("--db", "foreign.db", *command, cwd=tmp_path), "localmem")
    assert path.read_bytes() == before  # still a rollback-journal file, not switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.db"]


def test_export_is_synced_before_it_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from localmem.cli import main

    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("durable once reported")
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "out" / "e.jsonl"
    assert main(["--db", str(tmp_path / "w.db"), "export", str(target)]) == 0
    assert target.is_file()
    assert any(Path(p).name.startswith(".e.jsonl.") for p in synced)  # the data, before the rename
    assert str(target.parent) in synced  # and the directory entry, after it


# -- synchronous ----------------------------------------------------------------------------------


def test_synchronous_is_normal_or_full_from_the_environment(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    monkeypatch.delenv("LOCALMEM_SYNCHRONOUS", raising=False)
    with MemoryStore(path, embedder="hash") as store:
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    monkeypatch.setenv("LOCALMEM_SYNCHRONOUS", " full ")
    with MemoryStore(path, embedder="hash") as store:
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        store.store("committed with a sync of the WAL")
    monkeypatch.setenv("LOCALMEM_SYNCHRONOUS", "sometimes")
    with pytest.raises(ConfigError, match="LOCALMEM_SYNCHRONOUS"):
        MemoryStore(path, embedder="hash")
    result = localmem("--db", "s.db", "stats", cwd=tmp_path, env=environment(LOCALMEM_SYNCHRONOUS="off"))
    assert_refused(result, "LOCALMEM_SYNCHRONOUS")


# -- issue 33 item 6: a destination that is not a regular file is never replaced ---------------------------


def special_destinations(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a symbolic link to a regular file and a dangling one, all inside ``tmp_path``."""
    (tmp_path / "precious.txt").write_text("not to be replaced\n")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(tmp_path / "precious.txt")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return {"FIFO": tmp_path / "pipe", "symbolic link": tmp_path / "link", "dangling": tmp_path / "dangling"}


def test_export_and_backup_refuse_a_fifo_or_a_symlink_naming_it(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store_many([{"content": f"memory {i}"} for i in range(3)])
    destinations = special_destinations(tmp_path)
    for kind, dest in destinations.items():
        expected = "a symbolic link" if kind == "dangling" else f"a {kind}"
        exported = localmem("--db", "w.db", "export", str(dest), cwd=tmp_path)
        assert_refused(exported, str(dest), expected, "not a regular file")
        backed = localmem("--db", "w.db", "backup", str(dest), "--force", cwd=tmp_path)
        assert_refused(backed, str(dest), expected, "not a regular file")
    assert stat.S_ISFIFO(os.lstat(destinations["FIFO"]).st_mode)
    assert os.readlink(destinations["symbolic link"]) == str(tmp_path / "precious.txt")
    assert (tmp_path / "precious.txt").read_text() == "not to be replaced\n"
    assert os.path.islink(destinations["dangling"]) and not (tmp_path / "nowhere").exists()
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    # A regular file or a new name is still written, and replaced when asked.
    for _ in range(2):
        assert localmem("--db", "w.db", "export", "out.jsonl", cwd=tmp_path).returncode == 0
        assert localmem("--db", "w.db", "backup", "copy.db", "--force", cwd=tmp_path).returncode == 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) >= 3 and memory_count(tmp_path / "copy.db") == 3


def test_the_rename_itself_refuses_a_fifo_that_took_the_name_meanwhile(tmp_path: Path) -> None:
    from localmem.errors import ValidationError
    from localmem.storage.files import place

    temp = tmp_path / "made.tmp"
    temp.write_text("new contents")
    os.mkfifo(tmp_path / "pipe")  # appeared after the command checked its destination
    with pytest.raises(ValidationError, match="is a FIFO"):
        place(temp, tmp_path / "pipe", overwrite=True)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode) and temp.read_text() == "new contents"


def test_export_overwrites_an_earlier_export_but_not_another_file(tmp_path: Path, live: MemoryStore) -> None:
    """Re-exporting to the same file is routine; writing over a file that is no export (a typo
    naming notes.txt or ~/.bashrc) is what backup refuses without --force, and now export too."""
    assert localmem("--db", "w.db", "export", "e.jsonl", cwd=tmp_path).returncode == 0
    again = localmem("--db", "w.db", "export", "e.jsonl", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert localmem("--db", "w.db", "export", "empty.jsonl", cwd=tmp_path).returncode == 0
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes\n", encoding="utf-8")
    refused = localmem("--db", "w.db", "export", "notes.txt", cwd=tmp_path)
    assert_refused(refused)
    assert "notes.txt" in refused.stderr and "--force" in refused.stderr
    assert notes.read_text(encoding="utf-8") == "my own notes\n"
    forced = localmem("--db", "w.db", "export", "notes.txt", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(notes.read_text(encoding="utf-8").splitlines()[0])["format"] == "localmem-export"
