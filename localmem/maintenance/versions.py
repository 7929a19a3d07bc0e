"""What a bug report needs: the versions of localmem, Python, SQLite, sqlite-vec, apsw, the
optional extras, and the schema of a database file (read without changing it)."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

from .. import __version__
from ..errors import ConfigError
from ..storage.migrations import LATEST_VERSION, schema_version

# Extras and the distribution that says whether each is installed.
EXTRAS = {
    "server": ("starlette", "uvicorn"),
    "mcp": ("mcp",),
    "embeddings": ("sentence-transformers",),
    "onnx": ("onnxruntime", "tokenizers"),
}


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _sqlite_vec_version() -> str:
    conn = apsw.Connection(":memory:")
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        return str(conn.execute("SELECT vec_version()").fetchone()[0]).lstrip("v")
    except apsw.Error as exc:
        return f"unavailable ({exc})"
    finally:
        conn.close()


def database_schema(path: str) -> dict[str, Any]:
    """The schema version of the file at ``path``, opened read-only (never created or migrated)."""
    info: dict[str, Any] = {"path": path, "exists": Path(path).expanduser().exists(),
                            "schema_version": None, "latest_schema_version": LATEST_VERSION}
    if not info["exists"]:
        return info
    try:
        conn = apsw.Connection(str(Path(path).expanduser()), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            info["schema_version"] = schema_version(conn)
        finally:
            conn.close()
    except (apsw.Error, ConfigError) as exc:
        info["error"] = getattr(exc, "message", None) or str(exc)
    return info


def versions(db_path: str | None = None) -> dict[str, Any]:
    """localmem, Python, SQLite, sqlite-vec and apsw versions, the extras, and ``db_path``'s schema."""
    report: dict[str, Any] = {
        "status": "success",
        "localmem": __version__,
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "sqlite": apsw.sqlite_lib_version(),
        "sqlite_vec": _sqlite_vec_version(),
        "apsw": apsw.apswversion(),
        "extras": {extra: {name: _installed(name) for name in names} for extra, names in EXTRAS.items()},
    }
    if db_path is not None:
        report["database"] = database_schema(db_path)
    return report
