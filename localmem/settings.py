"""Settings the interfaces share: which database file, and which embedder for it.

The CLI, the MCP server and the HTTP server all open a store the same way:
the path from ``--db``, else ``$LOCALMEM_DB``, else the user data dir; the
embedder from ``--embedder``, else ``$LOCALMEM_EMBEDDER``, else the one the
file was created with, else ``auto``. A file that cannot be written is opened
read-only (``opens_read_only``).
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from .errors import LocalMemError
from .paths import default_db_path
from .embedders import spec_for_recorded_name
from .storage.database import MEMORY_PATH, connect_read_only
from .storage.files import writable

__all__ = ["choose_embedder", "default_db_path", "embedder_spec_for", "opens_read_only", "recorded_embedder"]


def recorded_embedder(path: str) -> str | None:
    """The embedder name a database file recorded when it was created, if any (read-only peek)."""
    if path == MEMORY_PATH:
        return None
    file_path = Path(path).expanduser()
    try:
        if not file_path.is_file() or file_path.stat().st_size == 0:
            return None
    except OSError:
        return None
    try:
        conn = connect_read_only(file_path)  # also on read-only media
    except LocalMemError:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return row[0] if row and row[0] else None
    except apsw.Error:
        return None
    finally:
        conn.close()


def opens_read_only(path: str) -> bool:
    """Whether to open ``path`` read-only: an existing file that cannot be written
    (read-only media, no write permission), where reads still work."""
    if path == MEMORY_PATH:
        return False
    file_path = Path(path).expanduser()
    return file_path.exists() and not writable(file_path)


def embedder_spec_for(name: str) -> str:
    """The ``embedder=`` argument that recreates a recorded embedder name."""
    return spec_for_recorded_name(name)


def choose_embedder(explicit: str | None, path: str) -> str:
    """``--embedder``, else ``$LOCALMEM_EMBEDDER``, else what the file recorded, else ``auto``.

    Reusing the recorded embedder keeps a database made with ``hash`` (or a
    particular model) in one vector space without repeating ``--embedder``.
    """
    if explicit and explicit.strip():
        return explicit.strip()
    env = (os.environ.get("LOCALMEM_EMBEDDER") or "").strip()
    if env:
        return env
    recorded = recorded_embedder(path)
    if recorded:
        return embedder_spec_for(recorded)
    return "auto"
