"""Opening the SQLite file: permissions, pragmas, the sqlite-vec extension, transactions.

Concurrency model (many processes on one file):

* WAL journal: readers never block writers and writers never block readers.
* Write transactions start with ``BEGIN IMMEDIATE`` (``transaction()``; also the
  connection's ``transaction_mode``, so a bare ``with conn:`` does the same).
  A writer takes the write lock before it reads anything, so it waits on the
  busy handler (``LockWait``, ``BUSY_TIMEOUT_MS``) while another writer
  commits. A deferred transaction that reads first and writes later cannot
  wait: SQLite fails its lock upgrade at once with "database is locked".
* Multi-statement reads that must agree (recall, health, doctor, export) run
  in ``read_transaction()``: one snapshot, no write lock.
* Resource faults (full disk, read-only file, lock timeout, I/O errors) leave
  ``transaction()`` as ``StorageError``, after the rollback; on a read-only
  connection it raises that at once.

Opening: ``connect()`` refuses, before it writes anything (the WAL switch,
the page size), a path that is another database's -wal/-shm/-journal file
and a SQLite file of another application. ``connect_read_only()`` opens an
existing file without writing to it, on read-only media too (``mode=ro``,
else ``immutable=1`` when no -wal contents would be skipped).
``PRAGMA synchronous`` is NORMAL, or FULL (``LOCALMEM_SYNCHRONOUS``).
``integrity_check()`` is SQLite's integrity check of one snapshot (see there
for FTS5's stale cache on long-lived connections).

Checkpointing (what keeps the WAL file bounded), done by ``WalCheckpointer``,
the connection's WAL hook, after a commit:

* each time the WAL has grown by ``WAL_AUTOCHECKPOINT_PAGES`` frames (8 MiB at
  8 KiB pages) a PASSIVE checkpoint, as SQLite's own autocheckpoint would: it
  never waits. Readers that keep arriving stop SQLite from restarting the log
  after it, so on its own the WAL would keep growing;
* from ``WAL_TRUNCATE_BYTES`` (32 MiB) a TRUNCATE checkpoint instead, which
  waits at most ``CHECKPOINT_WAIT_MS`` for the current readers to finish
  (new ones read the database file) and empties the WAL; PASSIVE if they do not;
* ``PRAGMA journal_size_limit`` (32 MiB): a WAL that was reset is cut back to
  that size, so a burst does not leave a large file behind.

So the WAL stays under about 32 MiB + 8 MiB + the largest single transaction,
as long as no reader keeps one snapshot open across every retry (localmem's
own reads last one call; a long export is the exception).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import sqlite_vec

from ..errors import ConfigError, StorageError
from .hybrid_clock import register_wall_clock
from .files import (companion_of, create_private_file, read_only_media, refuse_foreign_files,
                    refuse_special_database, writable)

MEMORY_PATH = ":memory:"
BUSY_TIMEOUT_MS = 10_000
WAL_AUTOCHECKPOINT_PAGES = 1000
WAL_TRUNCATE_BYTES = 32 * 1024 * 1024
JOURNAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024
CHECKPOINT_WAIT_MS = 200
# Reads go through a memory map of up to this much of the file (virtual address
# space only): the exact-cosine stage of recall looks up thousands of scattered
# embedding rows, 2.8 µs each through read() at 1M memories.
MMAP_SIZE_BYTES = 1 << 34

# PRAGMA synchronous in WAL mode: NORMAL syncs at checkpoints (a power cut can lose the
# last commits, never consistency); FULL also syncs the WAL at every commit.
SYNCHRONOUS_MODES = ("NORMAL", "FULL")
READ_ONLY_MESSAGE = ("The database file is read-only (read-only media, no write permission, or "
                     "opened with read_only=True): it can be read, not changed; nothing was changed")


class LockWait:
    """The busy handler: retry every few milliseconds until ``timeout_ms`` has passed.

    SQLite's built-in busy timeout backs off to 100 ms sleeps, so a process
    that has waited a while looks rarely and newer waiters keep taking the
    lock first; under steady contention its waits grow to seconds. Short
    jittered sleeps keep every waiter looking often (the sleep releases the GIL).
    """

    def __init__(self, timeout_ms: int) -> None:
        self.timeout = timeout_ms / 1000
        self.started = 0.0

    def __call__(self, count: int) -> bool:
        now = time.monotonic()
        if count == 0:
            self.started = now
        elif now - self.started >= self.timeout:
            return False  # give up: the statement fails with SQLITE_BUSY
        time.sleep(min(0.0005 * (count + 1), 0.004) * random.uniform(0.5, 1.5))
        return True


def set_lock_wait(conn: apsw.Connection, timeout_ms: int) -> None:
    """Wait up to ``timeout_ms`` for locks held by other connections (see ``LockWait``)."""
    conn.set_busy_handler(LockWait(timeout_ms))


class WalCheckpointer:
    """The WAL hook: PASSIVE checkpoints as the WAL grows, TRUNCATE past a size bound.

    Installing a WAL hook replaces SQLite's autocheckpoint, so this does its
    work too. It runs in the committing thread after the write lock is
    released; errors are swallowed (a checkpoint that cannot run now is
    retried after the next commit).
    """

    def __init__(self, page_size: int) -> None:
        self.page_size = max(512, page_size)
        self.truncate_pages = max(WAL_AUTOCHECKPOINT_PAGES, WAL_TRUNCATE_BYTES // self.page_size)
        self.last_attempt = 0  # WAL frames when this connection last checkpointed
        self.checkpoints = 0  # attempts made, and how many of them truncated the WAL
        self.truncations = 0

    def __call__(self, conn: apsw.Connection, dbname: str, pages: int) -> int:
        if pages < self.last_attempt:
            self.last_attempt = 0  # the WAL was reset (by any connection) since
        # SQLite's own autocheckpoint retries after every commit once the WAL is
        # past the threshold, which costs a WAL scan per commit while readers
        # keep the log from being reset; retry only as the log grows instead.
        if pages < WAL_AUTOCHECKPOINT_PAGES or pages - self.last_attempt < WAL_AUTOCHECKPOINT_PAGES:
            return apsw.SQLITE_OK
        self.last_attempt = pages
        self.checkpoints += 1
        try:
            if pages >= self.truncate_pages:
                set_lock_wait(conn, CHECKPOINT_WAIT_MS)
                try:
                    conn.wal_checkpoint(dbname, apsw.SQLITE_CHECKPOINT_TRUNCATE)
                    self.truncations += 1
                    self.last_attempt = 0
                    return apsw.SQLITE_OK
                except apsw.BusyError:
                    pass  # a reader still needs old frames: copy what we can
                finally:
                    set_lock_wait(conn, BUSY_TIMEOUT_MS)
            conn.wal_checkpoint(dbname, apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.Error:
            pass
        return apsw.SQLITE_OK


def _enable_wal(conn: apsw.Connection) -> None:
    """Switch to WAL, retrying: while other processes open a new file at the same moment,
    SQLite can refuse the switch with SQLITE_BUSY without calling the busy handler."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def check_localmem_file(conn: apsw.Connection) -> None:
    """Refuse (``ConfigError``) a SQLite file that holds tables but no localmem ``meta`` table.

    Only reads: run before anything is written, so a refused file is left as it was.
    """
    tables = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    if tables and "meta" not in tables:
        raise ConfigError("Not a localmem database: it has tables but no localmem meta table")


def _refuse_companion(file_path: Path) -> None:
    owner = companion_of(file_path)
    if owner is not None:
        raise ConfigError(f"{file_path} is the {owner[1]} file of the database {owner[0]}, not a "
                          "database: give the database's own path")


def _synchronous(mode: str) -> str:
    value = mode.strip().upper() if isinstance(mode, str) else ""
    if value not in SYNCHRONOUS_MODES:
        raise ConfigError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {mode!r}")
    return value


def _open_hint(file_path: Path) -> str:
    if file_path.exists() and not writable(file_path):
        where = "is on a read-only file system" if read_only_media(file_path) else "cannot be written here"
        return (f" (the database {where}: open it with MemoryStore(path, read_only=True); "
                "the CLI's read commands do that by themselves)")
    return ""


def _load_vec(conn: apsw.Connection) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)


def connect(path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> apsw.Connection:
    """Open (creating if needed) a database with WAL, busy timeout, FKs and sqlite-vec.

    ``synchronous`` is NORMAL (the default) or FULL. A file that is another
    database's -wal/-shm/-journal, a SQLite file of another application, or a
    file (or companion) of another user is refused before anything is written to it.
    """
    target = str(path)
    mode = _synchronous(synchronous)
    fresh = True
    file_path: Path | None = None
    if target != MEMORY_PATH:
        file_path = Path(target).expanduser()
        _refuse_companion(file_path)
        refuse_special_database(file_path)
        fresh = not file_path.exists() or file_path.stat().st_size == 0
        try:
            create_private_file(file_path)
        except OSError as exc:
            raise ConfigError(f"Cannot create database file {file_path}: {exc}{_open_hint(file_path)}") from exc
        refuse_foreign_files(file_path)  # after the create: a file planted before it is not ours
        target = str(file_path)
    try:
        conn = apsw.Connection(target)
    except apsw.Error as exc:
        raise ConfigError(f"Cannot open database {target}: {exc}") from exc
    try:
        set_lock_wait(conn, BUSY_TIMEOUT_MS)
        register_wall_clock(conn)  # the change-log triggers' clock; a store sets its own
        conn.transaction_mode = "IMMEDIATE"  # `with conn:` too takes the write lock up front
        _load_vec(conn)
        if fresh:
            # Larger pages suit the 1.5 KB embedding rows; only settable before the first write.
            conn.execute("PRAGMA page_size = 8192")
        check_localmem_file(conn)
        if target != MEMORY_PATH:
            _enable_wal(conn)
            conn.execute(f"PRAGMA synchronous = {mode}")
            conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE_BYTES}")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}")
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.set_wal_hook(WalCheckpointer(page_size))
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except apsw.Error as exc:
        conn.close()
        hint = _open_hint(file_path) if file_path is not None else ""
        raise ConfigError(f"Cannot open database {target}: {exc}{hint}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _open_uri(uri: str) -> apsw.Connection:
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL index, if any
    except BaseException:
        conn.close()
        raise
    return conn


def connect_read_only(path: str | os.PathLike[str]) -> apsw.Connection:
    """Open an existing database for reading only (with sqlite-vec); nothing is written to it.

    ``mode=ro`` first: it sees every commit, including those still in the
    -wal file, and other processes may keep writing. A WAL database needs its
    -shm index, which read-only media cannot get when it is missing; there
    the file is opened ``immutable=1`` (no locks, no WAL) when it has no
    -wal contents that would be skipped, and refused when it does.
    """
    if str(path) == MEMORY_PATH:
        raise ConfigError("An in-memory database cannot be opened read-only")
    file_path = Path(path).expanduser()
    _refuse_companion(file_path)
    refuse_special_database(file_path)
    if not file_path.is_file():
        raise ConfigError(f"Cannot open database {file_path} read-only: no database at {file_path}")
    uri = file_path.absolute().as_uri()
    try:
        conn = _open_uri(f"{uri}?mode=ro")
    except apsw.CantOpenError as exc:
        wal = Path(f"{file_path}-wal")
        if not read_only_media(file_path):
            raise ConfigError(f"Cannot open database {file_path} read-only: {exc}") from exc
        if wal.exists() and wal.stat().st_size > 0:
            raise ConfigError(
                f"Cannot open database {file_path} read-only: its -wal file holds commits that "
                "cannot be read without the -shm file, which read-only media cannot get; copy the "
                "database with its -wal file to writable storage") from exc
        try:
            conn = _open_uri(f"{uri}?immutable=1")
        except apsw.Error as again:
            raise ConfigError(f"Cannot open database {file_path} read-only: {again}") from again
    except apsw.Error as exc:
        raise ConfigError(f"Cannot open database {file_path} read-only: {exc}") from exc
    try:
        set_lock_wait(conn, BUSY_TIMEOUT_MS)
        _load_vec(conn)
        check_localmem_file(conn)
        conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE_BYTES}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except apsw.Error as exc:
        conn.close()
        raise ConfigError(f"Cannot open database {file_path} read-only: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


# -- errors ------------------------------------------------------------------

_STORAGE_ERRORS: tuple[tuple[type[apsw.Error], int, str], ...] = (
    (apsw.FullError, 507, "The disk is full (or the database reached its size limit)"),
    (apsw.ReadOnlyError, 503, "The database file is read-only"),
    (apsw.BusyError, 503, "The database is busy: another process kept it locked for more than "
                          f"{BUSY_TIMEOUT_MS // 1000} s"),
    (apsw.IOError, 503, "The database file could not be read or written (I/O error)"),
    (apsw.CorruptError, 503, "The database file is damaged; restore it from a backup or an export"),
    (apsw.NotADBError, 503, "The file is not a SQLite database"),
    (apsw.CantOpenError, 503, "The database file (or its -wal/-shm companions) cannot be opened"),
)


def storage_error(exc: BaseException) -> BaseException:
    """``exc`` as a ``StorageError`` when it is a resource fault; otherwise ``exc`` itself.

    A failed write that SQLite already rolled back makes apsw's own rollback
    fail with "no transaction is active"; the original fault is then the
    exception's context, and that is what is reported.
    """
    if (isinstance(exc, apsw.SQLError) and "no transaction is active" in str(exc)
            and isinstance(exc.__context__, apsw.Error)):
        exc = exc.__context__
    for kind, code, message in _STORAGE_ERRORS:
        if isinstance(exc, kind):
            return StorageError(f"{message}; nothing was changed ({exc})", code=code)
    return exc


def _rollback(conn: apsw.Connection) -> None:
    if conn.in_transaction:  # SQLite rolls back by itself after some errors (full disk, I/O)
        try:
            conn.execute("ROLLBACK")
        except apsw.Error:
            pass


def _raise_translated(exc: BaseException) -> None:
    translated = storage_error(exc)
    if translated is exc:
        raise exc
    raise translated from exc


@contextmanager
def storage_errors() -> Iterator[None]:
    """Resource faults raised inside come out as ``StorageError`` (``storage_error``); others as they are."""
    try:
        yield
    except apsw.Error as exc:
        _raise_translated(exc)


@contextmanager
def transaction(conn: apsw.Connection, *, busy_timeout_ms: int | None = None) -> Iterator[apsw.Connection]:
    """A write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error.

    Nested inside another transaction it is a savepoint. Resource faults
    (full disk, read-only file, lock held past the busy timeout, I/O errors)
    come out as ``StorageError``; the transaction is rolled back first.
    ``busy_timeout_ms`` waits less (or more) than ``BUSY_TIMEOUT_MS`` for the
    write lock.
    """
    if conn.in_transaction:
        with conn:  # a savepoint
            yield conn
        return
    if conn.readonly("main"):
        raise StorageError(READ_ONLY_MESSAGE, code=503)
    if busy_timeout_ms is not None:
        set_lock_wait(conn, busy_timeout_ms)
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            _raise_translated(exc)
    finally:
        if busy_timeout_ms is not None:
            set_lock_wait(conn, BUSY_TIMEOUT_MS)
    try:
        yield conn
    except BaseException as exc:
        _rollback(conn)
        if isinstance(exc, apsw.Error):
            _raise_translated(exc)
        raise
    try:
        conn.execute("COMMIT")
    except apsw.Error as exc:
        _rollback(conn)
        _raise_translated(exc)


@contextmanager
def read_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Several reads from one snapshot (``BEGIN DEFERRED``), without taking the write lock.

    Inside another transaction it adds nothing. Nothing may be written in
    it: upgrading a read snapshot to a write cannot wait for the lock.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN DEFERRED")
    try:
        yield conn
    except BaseException:
        _rollback(conn)
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")


_FTS5_TABLE = re.compile(r"\bUSING\s+fts5\s*\(", re.IGNORECASE)


def integrity_check(conn: apsw.Connection) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` from one read snapshot: the problems, one per line.

    An empty list means the file is sound. FTS5 checks its inverted index
    against the index structure it cached when this connection last read the
    table, and does not reload it first: on a long-lived connection, after
    other processes committed, that structure is an older snapshot's, and the
    check reports corruption ("corruption found reading blob ...") that a
    fresh connection does not see. Opening a cursor on each FTS5 table inside
    the snapshot makes FTS5 drop the stale structure (its xOpen resets the
    cache when ``PRAGMA data_version`` changed), so the check reads the
    snapshot it runs in.
    """
    with read_transaction(conn):
        tables = [name for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
            if sql and _FTS5_TABLE.search(sql)]
        for name in tables:
            quoted = name.replace('"', '""')
            conn.execute(f'SELECT rowid FROM "{quoted}" LIMIT 1').fetchall()
        rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
    if rows == ["ok"]:
        return []
    lines = [line.strip() for row in rows for line in row.splitlines()]
    return [line for line in lines if line and not line.startswith("*** in database")] or rows
