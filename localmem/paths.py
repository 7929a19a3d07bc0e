"""Where the database lives by default (standard library only: the hook client reads it too)."""

from __future__ import annotations

import os

__all__ = ["default_db_path"]


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
