"""The database file on disk: its companion files, private creation, durable placement.

SQLite keeps a database's state in up to three more files beside it, named
by suffix: ``-wal`` (committed transactions not yet copied into the file),
``-shm`` (the WAL's index) and ``-journal`` (a rollback journal). Writing
any other content under one of those names destroys committed data, so
``refuse_database_file`` is the one check every command that writes a file
(or reads a backup) goes through: it compares real paths (symlinks, ``..``
and relative names resolved) and inodes.

Files and directories localmem creates are private (0600 / 0700) whatever
the umask, and a file that replaces another is synced, renamed into place and
its directory synced, so a crash leaves the old file or the new one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import ConfigError, LocalMemError, ValidationError

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with ``~``, symlinks (dangling ones too), ``..`` and the working directory resolved."""
    return Path(os.path.realpath(Path(path).expanduser()))


def companion_of(path: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """``(database, suffix)`` when ``path`` is named as a companion of an existing file."""
    real = real_path(path)
    for suffix in COMPANION_SUFFIXES:
        if real.name.endswith(suffix) and len(real.name) > len(suffix):
            owner = real.with_name(real.name[: -len(suffix)])
            if owner.is_file():
                return owner, suffix
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)  # hard links and bind mounts too
    except OSError:
        return False


def refuse_database_file(path: str | os.PathLike[str], database: str | os.PathLike[str] | None,
                         *, role: str) -> None:
    """Raise ``ValidationError`` when ``path`` is ``database``, one of its companions, or
    the companion of another existing file (which SQLite would take for that file's log).

    ``role`` names what ``path`` was meant to be ("the backup", "the export", ...).
    """
    real = real_path(path)
    if database is not None:
        db = real_path(database)
        if real == db or _same_file(real, db):
            raise ValidationError(f"{role} cannot be {path}: that is the same file as the database {database}")
        for suffix in COMPANION_SUFFIXES:
            if real == db.with_name(db.name + suffix):
                raise ValidationError(f"{role} cannot be {path}: that is the {suffix} file of the "
                                      f"database {database}, and writing it would destroy its data")
    owner = companion_of(real)
    if owner is not None:
        raise ValidationError(f"{role} cannot be {path}: that is the {owner[1]} file of the "
                              f"database {owner[0]}, and writing it would destroy its data")


def _special_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (None when it is)."""
    for test, kind in ((stat.S_ISREG, None), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


def refuse_special_database(path: Path) -> None:
    """Raise ``ConfigError`` when ``path`` (followed through symbolic links) is there and is not a
    regular file: a device, a FIFO or a socket is never opened, created over or given a new mode."""
    try:
        info = os.stat(path)
    except OSError:
        return  # nothing there yet (or unreachable): creating or opening it says why
    kind = _special_kind(info.st_mode)
    if kind is not None:
        raise ConfigError(f"{path} is {kind}, not a database file: refused, and left untouched")


def refuse_special_output(path: str | os.PathLike[str], *, role: str, hint: str = "") -> None:
    """Raise ``ValidationError`` unless ``path`` names nothing yet or a regular file.

    A file localmem writes is renamed over its name, which replaces whatever is
    there: a FIFO's reader would get nothing, a symbolic link (say to
    /dev/stdout) or a device node would be replaced by a plain file. Checked
    with lstat, so a symbolic link is refused as one, not followed.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        return  # no such name can exist (its directory is a file...): creating it says why
    kind = _special_kind(info.st_mode)
    if kind is not None:
        where = f" to {os.readlink(path)}" if stat.S_ISLNK(info.st_mode) else ""
        raise ValidationError(f"{role} cannot be {path}: that is {kind}{where}, not a regular file, and "
                              f"writing it would replace it; give a new name or a regular file{hint}")


def create_private_directories(directory: Path) -> None:
    """Create ``directory`` and any missing parents with mode 0700 (chmod: the umask cannot widen it)."""
    missing: list[Path] = []
    parent = directory
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            continue  # another process made it first; leave its mode alone
        os.chmod(folder, DIRECTORY_MODE)


def refuse_foreign_files(path: Path) -> None:
    """Raise ``ConfigError`` when the database file or one of its companions exists, belongs to
    another user, and sits in a folder others can write to (a sticky /tmp, a group folder): that
    user may have planted it, and what is written to it (the -wal and -journal hold pages of memory
    text before the file does) would be theirs to read. In a folder only its owner writes, a file of
    another user was put there by that owner or root (root opening a user's store, a container's
    root on a mounted volume): opened as before. Files that do not exist yet are made by this user."""
    try:
        shared = bool(os.stat(path.parent).st_mode & 0o022)
    except OSError:
        return  # no folder: nothing in it yet, and the create that follows says why it fails
    if not shared:
        return
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in COMPANION_SUFFIXES)):
        try:
            owners = {os.lstat(candidate).st_uid, os.stat(candidate).st_uid}  # a symlink and what it names
        except OSError:
            continue  # missing (or dangling: SQLite creates the file as this user)
        foreign = sorted(owners - {os.geteuid()})
        if foreign:
            owner = foreign[0]
            raise ConfigError(f"{candidate} belongs to uid {owner}, not to this user (uid {os.geteuid()}): "
                              f"that user could read what is written to it; not opened (move the store "
                              f"to a folder of your own, or have its owner remove the file)")


def create_private_file(path: Path) -> None:
    """Create the database file (and any missing directories) readable by the owner only.

    SQLite gives the -wal and -shm files the same mode as the database file,
    so creating the file ourselves with 0600 keeps all three private. The
    modes are set with chmod after creation, so the umask cannot widen them
    (0o000) or lock the owner out (0o277). An existing empty file (say, made
    with ``touch``) is about to become a database, so it gets 0600 too; a
    database that has contents keeps the mode its owner gave it.
    """
    if path.exists():
        try:
            info = path.stat()
            if stat.S_ISREG(info.st_mode) and info.st_size == 0 and info.st_uid == os.geteuid() and info.st_mode & 0o077:
                os.chmod(path, FILE_MODE)
        except OSError:
            pass  # not ours to change (or read-only media): SQLite reports what matters
        return
    create_private_directories(path.parent)
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return  # created concurrently by another process
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    """Flush a file's (or a directory's) contents to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DestinationExists(LocalMemError):
    """``place(..., overwrite=False)`` found a file under the final name."""


def place(temp: Path, dest: Path, *, overwrite: bool) -> None:
    """Move the synced file ``temp`` to ``dest`` and sync the directory entry.

    Without ``overwrite`` the move is a hard link, which fails rather than
    replace a file that appeared meanwhile (``DestinationExists``); where the
    file system has no hard links it falls back to a checked rename.
    """
    if overwrite:
        refuse_special_output(dest, role="the file")  # the last look before the rename replaces it
        os.replace(temp, dest)
    else:
        try:
            os.link(temp, dest)
        except FileExistsError:
            raise DestinationExists(f"{dest} already exists") from None
        except OSError:
            if os.path.lexists(dest):
                raise DestinationExists(f"{dest} already exists") from None
            os.replace(temp, dest)
        else:
            os.unlink(temp)
    fsync_path(dest.parent)


@contextmanager
def replacing_file(target: Path) -> Iterator[IO[str]]:
    """A text file written beside ``target`` (0600), then synced and renamed over it.

    An interrupted or failed write leaves ``target`` as it was and no
    temporary file behind; a finished one is on the disk before this returns.
    """
    create_private_directories(target.parent)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)  # 0600
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        place(temp, target, overwrite=True)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def remove_database_files(path: Path) -> None:
    """Delete a database file and its companions, those that exist."""
    for name in (str(path), *(f"{path}{suffix}" for suffix in COMPANION_SUFFIXES)):
        try:
            os.unlink(name)
        except OSError:
            # A name that cannot exist (its directory is a file, or is on read-only media) is
            # gone already; the error worth reporting comes when the file is created.
            if os.path.lexists(name):
                raise


def read_only_media(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (or, when it does not exist, its directory) is on a read-only file system."""
    target = Path(path).expanduser()
    probe = target if target.exists() else target.parent
    try:
        return bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def writable(path: str | os.PathLike[str]) -> bool:
    """Whether a database at ``path`` can be opened for writing: the file and its directory
    (where SQLite makes -wal and -shm) are writable, and not on read-only media."""
    target = Path(path).expanduser()
    if read_only_media(target):
        return False
    return os.access(target, os.W_OK) and os.access(target.parent, os.W_OK)
