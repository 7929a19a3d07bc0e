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
  ``transaction()`` as ``StorageError``, after the rollback.

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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import sqlite_vec

from ..errors import ConfigError, StorageError

MEMORY_PATH = ":memory:"
BUSY_TIMEOUT_MS = 10_000
WAL_AUTOCHECKPOINT_PAGES = 1000
WAL_TRUNCATE_BYTES = 32 * 1024 * 1024
JOURNAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024
CHECKPOINT_WAIT_MS = 200
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def create_private_file(path: Path) -> None:
    """Create the database file (and any missing directories) readable by the owner only.

    SQLite gives the -wal and -shm files the same mode as the database file,
    so creating the file ourselves with 0600 keeps all three private. The
    modes are set with chmod after creation, so the umask cannot widen them
    (0o000) or lock the owner out (0o277).
    """
    if path.exists():
        return
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            continue  # another process made it first; leave its mode alone
        os.chmod(directory, DIRECTORY_MODE)
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return  # created concurrently by another process
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


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


def connect(path: str | os.PathLike[str]) -> apsw.Connection:
    """Open (creating if needed) a database with WAL, busy timeout, FKs and sqlite-vec."""
    target = str(path)
    fresh = True
    if target != MEMORY_PATH:
        file_path = Path(target).expanduser()
        fresh = not file_path.exists() or file_path.stat().st_size == 0
        try:
            create_private_file(file_path)
        except OSError as exc:
            raise ConfigError(f"Cannot create database file {file_path}: {exc}") from exc
        target = str(file_path)
    try:
        conn = apsw.Connection(target)
    except apsw.Error as exc:
        raise ConfigError(f"Cannot open database {target}: {exc}") from exc
    try:
        set_lock_wait(conn, BUSY_TIMEOUT_MS)
        conn.transaction_mode = "IMMEDIATE"  # `with conn:` too takes the write lock up front
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        if fresh:
            # Larger pages suit the 1.5 KB embedding rows; only settable before the first write.
            conn.execute("PRAGMA page_size = 8192")
        if target != MEMORY_PATH:
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA mmap_size = 268435456")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}")
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.set_wal_hook(WalCheckpointer(page_size))
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except apsw.Error as exc:
        conn.close()
        raise ConfigError(f"Cannot open database {target}: {exc}") from exc
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
