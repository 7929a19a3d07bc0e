"""Opening the SQLite file: permissions, pragmas and the sqlite-vec extension."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import sqlite_vec

from .errors import ConfigError

MEMORY_PATH = ":memory:"
BUSY_TIMEOUT_MS = 10_000


def create_private_file(path: Path) -> None:
    """Create the database file (and its directory) readable by the owner only.

    SQLite gives the -wal and -shm files the same mode as the database file,
    so creating the file ourselves with 0600 keeps all three private.
    """
    if path.exists():
        return
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    os.close(fd)


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
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        if fresh:
            # Larger pages suit the 1.5 KB embedding rows; only settable before the first write.
            conn.execute("PRAGMA page_size = 8192")
        if target != MEMORY_PATH:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA mmap_size = 268435456")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except apsw.Error as exc:
        raise ConfigError(f"Cannot open database {target}: {exc}") from exc
    return conn
