"""Opening a sync peer's database file, which may come from anywhere.

A SQLite file carries code: triggers and views run on the connection that
opens it. A peer file is therefore first read on a read-only connection with
``trusted_schema`` off and SQLite's defensive mode on, and its schema compared
object by object with the schema localmem itself makes at the file's version
(built in memory by the same migrations). Any other trigger, view, table or
index, or a known one whose definition differs, is refused by name before the
file is opened for writing. The store opened afterwards keeps both settings on
its connection and is checked once more (the file may change between the two
opens). A dry run opens the peer read-only and never upgrades its schema.
"""

from __future__ import annotations

from pathlib import Path

import apsw

from ..errors import ConfigError, LocalMemError
from ..settings import choose_embedder
from ..storage.database import connect, connect_read_only
from ..storage.migrations import LATEST_VERSION, migrate, schema_version
from ..storage.statements import Statements
from ..store import MemoryStore

SchemaEntry = tuple[str, str, str, str | None]  # type, name, table, sql


def harden(conn: apsw.Connection) -> None:
    """No schema-defined code runs with more than its own rights; no write corrupts the file."""
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)


def _entries(conn: apsw.Connection) -> dict[str, SchemaEntry]:
    return {row[1]: (row[0], row[1], row[2], row[3]) for row in conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%'")}


def expected_schema(version: int) -> dict[str, SchemaEntry]:
    """The schema objects localmem makes at ``version``, by name."""
    conn = connect(":memory:")
    try:
        migrate(conn, Statements(), target=version)
        return _entries(conn)
    finally:
        conn.close()


def schema_problems(conn: apsw.Connection, label: str) -> list[str]:
    """What in ``conn``'s schema is not localmem's own at its version (empty: all of it is)."""
    version = schema_version(conn)
    if version > LATEST_VERSION:
        raise ConfigError(f"{label} has schema version {version}, newer than this localmem supports "
                          f"({LATEST_VERSION}); upgrade localmem to sync with it")
    if version == 0:
        raise LocalMemError(f"{label} is not a localmem store (it has no schema version)")
    expected, found = expected_schema(version), _entries(conn)
    problems = [f"unknown {entry[0]} {name!r}" for name, entry in sorted(found.items()) if name not in expected]
    problems += [f"altered {entry[0]} {name!r}" for name, entry in sorted(found.items())
                 if name in expected and expected[name] != entry]
    problems += [f"missing {entry[0]} {name!r}" for name, entry in sorted(expected.items()) if name not in found]
    return problems


def check_peer_schema(conn: apsw.Connection, label: str) -> None:
    """Raise ``LocalMemError`` naming every schema object of the peer that localmem did not make."""
    problems = schema_problems(conn, label)
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise LocalMemError(f"{label} is refused as a sync peer: its schema is not localmem's own ({shown}). "
                            "A peer's triggers and views would run here; nothing was read or written")


def open_peer_store(path: str, *, dry_run: bool) -> MemoryStore:
    """The peer file as a ``MemoryStore`` (with the embedder its file records), after its schema
    passed ``check_peer_schema``; read-only for a dry run."""

    file_path = Path(path).expanduser()
    conn = connect_read_only(file_path)
    try:
        harden(conn)
        check_peer_schema(conn, path)
    finally:
        conn.close()
    store = MemoryStore(file_path, embedder=choose_embedder(None, str(file_path)), read_only=dry_run)
    try:
        harden(store.conn)
        check_peer_schema(store.conn, path)
    except BaseException:
        store.close()
        raise
    return store
