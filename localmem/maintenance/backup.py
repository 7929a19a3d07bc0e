"""Backup and restore through SQLite's online backup API (``localmem backup`` / ``restore``).

``backup_database`` copies every page of the live database in one step, that
is from one read snapshot: the copy is consistent even while other processes
write (WAL readers do not block writers, and writers do not disturb the
snapshot). The database is only read (a read-only connection, so this works
on read-only media too). The copy is written next to the destination under a
temporary name (mode 0600), switched to a self-contained rollback journal,
checked with ``PRAGMA integrity_check``, synced and renamed into place, so an
interrupted or failed backup never leaves a half-written file under the final
name, nor a temporary one beside it.

``restore_database`` first checks that the source is a sound localmem file
the running version understands, takes the live database's write lock, saves
the current contents (itself an online backup) to ``<db>.pre-restore-<UTC
time>`` (``-2``, ``-3``, ... when that name is taken; an earlier copy is never
overwritten), then copies the source into the live database, again through the
backup API: one write transaction under SQLite's locks, so processes that have
the file open see either the old or the new contents, never a mixture, nobody
has to be stopped, and no commit of another process can fall between the saved
copy and the restored contents (writers wait for the lock meanwhile).
It then records a new ``restore_token`` in meta, which the caches of processes
that keep the file open are keyed on (the restore took the change counters back),
and a new store identity (a backup copy gets one too): a copy is another store
for sync (docs/sync.md, "Copies and restores").

Neither ever writes over the database or its -wal/-shm/-journal files, nor
restores from them (``storage.files.refuse_database_file``).
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import apsw

from ..errors import ConfigError, LocalMemError, ValidationError
from ..storage.database import (
    BUSY_TIMEOUT_MS,
    connect,
    connect_read_only,
    integrity_check,
    set_lock_wait,
    storage_error,
    transaction,
)
from ..storage.files import (
    FILE_MODE,
    DestinationExists,
    create_private_file,
    fsync_path,
    place,
    refuse_database_file,
    refuse_foreign_files,
    refuse_special_output,
    remove_database_files,
)
from ..storage.migrations import LATEST_VERSION, schema_version
from ..storage.statements import Statements

__all__ = ["backup_database", "describe", "restore_database"]

# How many "-N" names a restore tries when the previous contents' name is taken.
SAVE_NAME_ATTEMPTS = 1000


def _copy(target: apsw.Connection, source: apsw.Connection) -> None:
    """Every page of ``source`` into ``target`` in one step (one snapshot, one write)."""
    with target.backup("main", source, "main") as step:
        while not step.done:
            step.step(-1)


def _replace_contents(target: apsw.Connection, source: apsw.Connection,
                      save: Callable[[], str] | None) -> str | None:
    """Copy ``source`` into ``target``, running ``save`` (which copies the previous contents
    elsewhere) once the target's write lock is held; returns what ``save`` returned.

    The first backup step takes the write lock and keeps it until the copy is done, so no
    other process can commit between the saved copy and the replacement: a commit there
    would be in neither. Readers go on reading the previous contents meanwhile (WAL).
    """
    saved = None
    with target.backup("main", source, "main") as step:
        step.step(0)  # the lock, and no page copied yet
        if save is not None:
            saved = save()
        while not step.done:
            step.step(-1)
    return saved


def _mark_restored(conn: apsw.Connection) -> None:
    """Record a new ``restore_token``: processes that keep caches of the file's contents
    (storage/code_search.py, Backend.content_cache) key them on it, since the restore took
    the file's change counters back to the backup's and later writes can bring them to
    values those caches have already seen. The restored store also takes a new store
    identity: its sync peers hold marks of what they sent to the store before the restore,
    which it no longer holds; under a new identity they send everything again."""
    sql = Statements()
    with transaction(conn):
        conn.execute(sql["meta_set"], {"key": "restore_token", "value": uuid.uuid4().hex})
        conn.execute(sql["sync_store_id_renew"])


def describe(conn: apsw.Connection) -> dict[str, Any]:
    """Schema version and row counts of a localmem database (raises ConfigError otherwise)."""
    try:
        version = schema_version(conn)
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0] if version else 0
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0] if version else 0
    except apsw.Error as exc:
        raise ConfigError(f"Not a readable localmem database: {exc}") from exc
    return {"schema_version": version, "memories": memories, "edges": edges}


def _summary(problems: list[str]) -> str:
    """One line for a list of integrity problems (a damaged file can have hundreds)."""
    first = problems[0] if len(problems[0]) <= 200 else problems[0][:197] + "..."
    if len(problems) == 1:
        return f"1 problem: {first}"
    return f"{len(problems)} problems, the first: {first}"


def _refuse_directory(dest_path: Path, source_path: Path) -> None:
    if dest_path.is_dir():
        raise ValidationError(f"the backup cannot be {dest_path}: that is a directory; give the "
                              f"backup's file name (say {dest_path / source_path.name})")


def names_folder(dest: str) -> bool:
    """Whether ``dest`` means a folder: it ends in a path separator or is an existing directory."""
    ends = dest.endswith(os.sep) or bool(os.altsep and dest.endswith(os.altsep))
    return ends or Path(dest).expanduser().is_dir()


def backup_name(source_path: Path, now: datetime) -> str:
    """The file name a backup gets inside a folder: ``memory-backup-20261203T204500Z.db``."""
    return f"{source_path.stem}-backup-{now.strftime('%Y%m%dT%H%M%SZ')}{source_path.suffix or '.db'}"


def _write_copy(src: apsw.Connection, dest_path: Path, *, overwrite: bool) -> dict[str, Any]:
    """Copy ``src`` to ``dest_path`` through a checked, synced temporary file beside it."""
    temp = dest_path.with_name(f".{dest_path.name}.{os.getpid()}.tmp")
    remove_database_files(temp)
    try:
        create_private_file(temp)  # 0600, and 0700 for any directory it creates
        refuse_foreign_files(temp)  # made by another user since the unlink: refused, never written
        copy = apsw.Connection(str(temp))
        try:
            set_lock_wait(copy, BUSY_TIMEOUT_MS)
            _copy(copy, src)
            copy.execute(Statements()["sync_store_id_renew"])  # a copy is another store (docs/sync.md)
            copy.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal/-shm beside it
            problems = integrity_check(copy)
            if problems:
                raise LocalMemError(f"the backup copy failed its integrity check ({_summary(problems)})")
            info = describe(copy)
        finally:
            copy.close()
        os.chmod(temp, FILE_MODE)
        fsync_path(temp)
        place(temp, dest_path, overwrite=overwrite)
    except apsw.Error as exc:
        translated = storage_error(exc)
        raise (translated if translated is not exc else LocalMemError(f"backup failed: {exc}")) from exc
    except OSError as exc:
        raise LocalMemError(f"cannot write the backup to {dest_path}: {exc.strerror or exc}") from exc
    finally:
        remove_database_files(temp)  # nothing is left of a failed copy (a placed one is renamed)
    return {"path": str(dest_path), "bytes": dest_path.stat().st_size, **info}


def _open_source(source_path: Path) -> tuple[apsw.Connection, dict[str, Any]]:
    src = connect_read_only(source_path)
    try:
        info = describe(src)
        if info["schema_version"] == 0:
            raise ConfigError(f"{source_path} is not a localmem database (no schema)")
    except BaseException:
        src.close()
        raise
    return src, info


def backup_database(source: str, dest: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Copy the database at ``source`` to ``dest`` (a single self-contained file, mode 0600).

    ``dest`` may not be the database or one of its companion files, however
    it is spelled; a ``dest`` that ends in a separator or is a directory is a
    folder (created 0700 when missing) and the backup goes inside it under
    ``backup_name`` (the answer says ``"into_folder"``); an existing file is
    replaced only with ``overwrite``.
    """
    source_path = Path(source).expanduser()
    if not source_path.is_file():
        raise LocalMemError(f"no database at {source_path}")
    folder = names_folder(dest)
    dest_path = Path(dest).expanduser()
    if folder:
        dest_path = dest_path / backup_name(source_path, datetime.now(timezone.utc))
    refuse_database_file(dest_path, source_path, role="the backup")
    _refuse_directory(dest_path, source_path)
    refuse_special_output(dest_path, role="the backup")
    if os.path.lexists(dest_path) and not overwrite:
        raise LocalMemError(f"{dest_path} already exists (use --force to overwrite it)")
    src, _ = _open_source(source_path)
    try:
        try:
            written = _write_copy(src, dest_path, overwrite=overwrite)
        except DestinationExists as exc:  # appeared while the copy was made
            raise LocalMemError(f"{dest_path} already exists (use --force to overwrite it)") from exc
    finally:
        src.close()
    written.update(_recorded(source_path, dest_path))
    return {"status": "success", "source": str(source_path), **written,
            **({"into_folder": str(dest_path.parent)} if folder else {})}


def _recorded(source_path: Path, dest_path: Path) -> dict[str, Any]:
    """Note the backup in the source's meta (``forget`` lists copies); a source that cannot be
    written (read-only media) is said in the answer, the backup stands."""
    from .copies import record_copy

    try:
        conn = connect(source_path)
        try:
            record_copy(conn, "backup", str(dest_path))
        finally:
            conn.close()
    except (apsw.Error, OSError, LocalMemError) as exc:
        return {"copy_not_recorded": f"the source could not record this backup ({exc})"}
    return {}


def _save_previous(target_path: Path) -> str:
    """Back up the live database to a ``.pre-restore-<time>`` name nobody has taken."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = f"{target_path.name}.pre-restore-{stamp}"
    src, _ = _open_source(target_path)
    try:
        for attempt in range(1, SAVE_NAME_ATTEMPTS + 1):
            candidate = target_path.with_name(base if attempt == 1 else f"{base}-{attempt}")
            if os.path.lexists(candidate):
                continue
            try:
                return _write_copy(src, candidate, overwrite=False)["path"]
            except DestinationExists:
                continue  # another restore took the name meanwhile
    finally:
        src.close()
    raise LocalMemError(f"no free name to save the current contents of {target_path} beside it ({base}-N)")


def restore_database(source: str, target: str) -> dict[str, Any]:
    """Replace the contents of the database at ``target`` with the backup at ``source``.

    Returns what was restored and where the previous contents were saved
    (``saved_previous``; None when the target was empty or new). The caller
    should open the target with a ``MemoryStore`` afterwards: that migrates a
    backup made by an older localmem.
    """
    source_path = Path(source).expanduser()
    target_path = Path(target).expanduser()
    refuse_database_file(target_path, None, role="the database to restore into")
    if not source_path.is_file():
        raise LocalMemError(f"no backup at {source_path}")
    refuse_database_file(source_path, target_path, role="the backup to restore")
    try:
        src = connect_read_only(source_path)
    except ConfigError as exc:
        if isinstance(exc.__cause__, apsw.NotADBError):
            raise ConfigError(f"{source_path} is not a SQLite database; nothing was restored") from exc
        raise
    saved: str | None = None
    try:
        try:
            problems = integrity_check(src)
        except apsw.Error as exc:
            raise ConfigError(f"the backup {source_path} is damaged ({exc}); nothing was restored") from exc
        if problems:
            raise ConfigError(f"the backup {source_path} is damaged ({_summary(problems)}); "
                              "nothing was restored")
        info = describe(src)
        if info["schema_version"] == 0:
            raise ConfigError(f"{source_path} is not a localmem database")
        if info["schema_version"] > LATEST_VERSION:
            raise ConfigError(f"the backup's schema version {info['schema_version']} is newer than this "
                              f"localmem supports ({LATEST_VERSION}); upgrade localmem to restore it")
        has_contents = target_path.is_file() and target_path.stat().st_size > 0
        save = (lambda: _save_previous(target_path)) if has_contents else None  # noqa: E731
        live = connect(target_path)
        try:
            try:
                saved = _replace_contents(live, src, save)
            except apsw.ReadOnlyError:  # refused at the first step, before anything was saved
                # A WAL database takes a backup only of its own page size; switch the
                # (otherwise idle) file to a rollback journal for the copy, then back.
                saved = save() if save is not None else None
                live.execute("PRAGMA journal_mode = DELETE")
                _copy(live, src)
                live.execute("PRAGMA journal_mode = WAL")
            problems = integrity_check(live)
            if problems:
                raise LocalMemError(f"the restored database failed its integrity check ({_summary(problems)})")
            _mark_restored(live)
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
