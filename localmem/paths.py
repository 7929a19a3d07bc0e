"""Where the database lives by default (standard library only: the hook client reads it too)."""

from __future__ import annotations

import os
import stat

__all__ = ["default_db_path", "make_folders"]


def default_db_path(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    """``$LOCALMEM_DB``, else ``$XDG_DATA_HOME/localmem/memory.db``, else ``~/.local/share/...``."""
    env = os.environ if environ is None else environ
    explicit = (env.get("LOCALMEM_DB") or "").strip()
    if explicit:
        return explicit
    base = (env.get("XDG_DATA_HOME") or "").strip()
    if not base or not os.path.isabs(base):  # the XDG spec says to ignore relative paths
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "localmem", "memory.db")


def private_folder_problem(folder: str) -> tuple[str, bool] | None:
    """Why ``folder`` is not a private folder of this user (a real directory, this user's, closed
    to others), and whether ``chmod 700`` alone would mend it; None when it is one. ``lstat``'s
    ``OSError`` (``FileNotFoundError`` for a missing folder) goes to the caller. The hook
    discovery note and the warm process's socket share this one check."""
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a directory (a symlink or another file)", False
    if info.st_uid != os.geteuid():
        return f"{folder} belongs to uid {info.st_uid}, not to this user", False
    if info.st_mode & 0o077:
        return f"{folder} is open to other users (mode {stat.S_IMODE(info.st_mode):o})", True
    return None


def make_folders(folder: str | os.PathLike[str], mode: int = 0o755) -> None:
    """Make ``folder`` and its missing parents with ``mode`` (less what the umask takes away: never
    more). ``os.makedirs`` and ``Path.mkdir(parents=True)`` give the parents 0777 less the umask, so
    under umask 002 a ``~/.cache`` made for localmem let the user's group rename what is inside."""
    missing = []
    path = os.fspath(folder)
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            continue  # made meanwhile by another process (or a file: the caller's next step says so)
