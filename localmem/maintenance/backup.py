"""Backup and restore through SQLite's online backup API (``localmem backup`` / ``restore``).

``backup_database`` copies every page of the live database in one step, that
is from one read snapshot: the copy is consistent even while other processes
write (WAL readers do not block writers, and writers do not disturb the
snapshot). It is written next to the destination under a temporary name
(mode 0600), switched to a self-contained rollback journal, checked with
``PRAGMA integrity_check``, synced and renamed into place, so an interrupted
backup never leaves a half-written file under the final name.

``restore_database`` first checks that the source is a sound localmem file
the running version understands, saves the current contents (itself an online
backup) to ``<db>.pre-restore-<UTC time>``, then copies the source into the
live database, again through the backup API: one write transaction under
SQLite's locks, so processes that have the file open see either the old or
the new contents, never a mixture, and nobody has to be stopped.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw

from ..storage.database import (
    BUSY_TIMEOUT_MS,
    FILE_MODE,
    connect,
    create_private_file,
    set_lock_wait,
    storage_error,
)
from ..errors import ConfigError, LocalMemError
from ..storage.migrations import LATEST_VERSION, schema_version

__all__ = ["backup_database", "describe", "restore_database"]


def _copy(target: apsw.Connection, source: apsw.Connection) -> None:
    """Every page of ``source`` into ``target`` in one step (one snapshot, one write)."""
    with target.backup("main", source, "main") as step:
        while not step.done:
            step.step(-1)


def describe(conn: apsw.Connection) -> dict[str, Any]:
    """Schema version and row counts of a localmem database (raises ConfigError otherwise)."""
    try:
        version = schema_version(conn)
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0] if version else 0
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0] if version else 0
    except apsw.Error as exc:
        raise ConfigError(f"Not a readable localmem database: {exc}") from exc
    return {"schema_version": version, "memories": memories, "edges": edges}


def _integrity(conn: apsw.Connection) -> list[str]:
    return [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for name in (str(path), f"{path}-journal", f"{path}-wal", f"{path}-shm"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def backup_database(source: str, dest: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Copy the database at ``source`` to ``dest`` (a single self-contained file, mode 0600)."""
    source_path = Path(source).expanduser()
    dest_path = Path(dest).expanduser()
    if not source_path.is_file():
        raise LocalMemError(f"no database at {source_path}")
    if dest_path.exists() and not overwrite:
        raise LocalMemError(f"{dest_path} already exists (use --force to overwrite it)")
    if dest_path.exists() and dest_path.resolve() == source_path.resolve():
        raise LocalMemError("the backup must go to another file than the database itself")
    temp = dest_path.with_name(f".{dest_path.name}.{os.getpid()}.tmp")
    _remove(temp)
    try:
        create_private_file(temp)  # 0600, and 0700 for any directory it creates
    except OSError as exc:
        raise LocalMemError(f"cannot write the backup to {dest_path}: {exc}") from exc
    src = connect(source_path)
    try:
        info = describe(src)
        if info["schema_version"] == 0:
            raise ConfigError(f"{source_path} is not a localmem database (no schema)")
        copy = apsw.Connection(str(temp))
        try:
            set_lock_wait(copy, BUSY_TIMEOUT_MS)
            _copy(copy, src)
            copy.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal/-shm beside it
            problems = _integrity(copy)
            if problems != ["ok"]:
                raise LocalMemError("the backup copy failed its integrity check: " + "; ".join(problems[:5]))
            info = describe(copy)
        finally:
            copy.close()
        os.chmod(temp, FILE_MODE)
        _fsync(temp)
        os.replace(temp, dest_path)
        _fsync(dest_path.parent)
    except apsw.Error as exc:
        _remove(temp)
        translated = storage_error(exc)
        raise (translated if translated is not exc else LocalMemError(f"backup failed: {exc}")) from exc
    except BaseException:
        _remove(temp)
        raise
    finally:
        src.close()
    return {"status": "success", "source": str(source_path), "path": str(dest_path),
            "bytes": dest_path.stat().st_size, **info}


def restore_database(source: str, target: str) -> dict[str, Any]:
    """Replace the contents of the database at ``target`` with the backup at ``source``.

    Returns what was restored and where the previous contents were saved
    (``saved_previous``; None when the target was empty or new). The caller
    should open the target with a ``MemoryStore`` afterwards: that migrates a
    backup made by an older localmem.
    """
    source_path = Path(source).expanduser()
    target_path = Path(target).expanduser()
    if not source_path.is_file():
        raise LocalMemError(f"no backup at {source_path}")
    if target_path.exists() and target_path.resolve() == source_path.resolve():
        raise LocalMemError("the backup and the database are the same file")
    try:
        src = apsw.Connection(str(source_path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise ConfigError(f"cannot open the backup {source_path}: {exc}") from exc
    saved: str | None = None
    try:
        try:
            problems = _integrity(src)
        except apsw.Error as exc:
            raise ConfigError(f"{source_path} is not a SQLite database: {exc}") from exc
        if problems != ["ok"]:
            raise ConfigError(f"the backup {source_path} is damaged: " + "; ".join(problems[:5]))
        info = describe(src)
        if info["schema_version"] == 0:
            raise ConfigError(f"{source_path} is not a localmem database")
        if info["schema_version"] > LATEST_VERSION:
            raise ConfigError(f"the backup's schema version {info['schema_version']} is newer than this "
                              f"localmem supports ({LATEST_VERSION}); upgrade localmem to restore it")
        if target_path.is_file() and target_path.stat().st_size > 0:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            saved_path = target_path.with_name(f"{target_path.name}.pre-restore-{stamp}")
            backup_database(str(target_path), str(saved_path))
            saved = str(saved_path)
        live = connect(target_path)
        try:
            try:
                _copy(live, src)
            except apsw.ReadOnlyError:
                # A WAL database takes a backup only of its own page size; switch the
                # (otherwise idle) file to a rollback journal for the copy, then back.
                live.execute("PRAGMA journal_mode = DELETE")
                _copy(live, src)
                live.execute("PRAGMA journal_mode = WAL")
            problems = _integrity(live)
            if problems != ["ok"]:
                raise LocalMemError("the restored database failed its integrity check: " + "; ".join(problems[:5]))
        except apsw.Error as exc:
            translated = storage_error(exc)
            if translated is exc:
                raise LocalMemError(f"restore failed: {exc}") from exc
            raise translated from exc
        finally:
            live.close()
    finally:
        src.close()
    return {"status": "success", "source": str(source_path), "path": str(target_path),
            "saved_previous": saved, **info}
