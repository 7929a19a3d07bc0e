"""Numbered schema migrations, applied in order inside one transaction each.

The schema version lives in the ``meta`` table. Opening a file whose version
is newer than the newest migration here is refused, so an old localmem never
writes to a schema it does not understand.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Callable

import apsw

from .database import check_localmem_file, transaction
from ..errors import ConfigError
from .statements import Statements
from .threads import thread_key, write_text_rows
from .hybrid_clock import register_wall_clock
from .identity import claim_home


# A memory pulled from a server gets the local id uuid5(PULL_NAMESPACE, "<server URL>\n<server id>"), so a
# pull stopped and run again gives it the same one (replication/pull_state.py). Kept here, below both,
# since migration 20 tells the memories a file's id map holds apart by it: it can never change.
PULL_NAMESPACE = uuid.UUID("6b1f4d2e-3c1a-5e8f-9a47-0c2d5b7e91aa")


def pulled_local_id(remote: str, remote_id: str) -> str:
    """The local id of the memory pulled from ``remote`` (its URL) under the server's ``remote_id``."""
    return str(uuid.uuid5(PULL_NAMESPACE, f"{remote}\n{remote_id}"))


def _run_script(conn: apsw.Connection, sql: str) -> None:
    # apsw stops a multi-statement execute at the first statement returning
    # rows; migration scripts return none, but drain every result to be sure.
    for _ in conn.execute(sql):
        pass


def migration_0001_initial(conn: apsw.Connection, sql: Statements) -> None:
    _run_script(conn, sql["migration_0001_initial"])


def migration_0002_fulltext(conn: apsw.Connection, sql: Statements) -> None:
    _run_script(conn, sql["migration_0002_fulltext"])


def migration_0003_threads(conn: apsw.Connection, sql: Statements) -> None:
    """Thread keys for existing memories, then the FTS index rebuilt with thread context."""
    _run_script(conn, sql["migration_0003_threads"])
    rows = list(conn.execute("SELECT pk, context, metadata, tags FROM memories"))
    for pk, context, metadata, tags in rows:
        try:
            meta, tag_list = json.loads(metadata or "{}"), json.loads(tags or "[]")
        except ValueError:
            continue
        if isinstance(meta, dict) and isinstance(tag_list, list):
            key = thread_key(context, meta, [t for t in tag_list if isinstance(t, str)])
            if key is not None:
                conn.execute(sql["memory_set_thread"], {"pk": pk, "thread": key})
    write_text_rows(conn, sql, None)


def migration_0004_metadata_terms(conn: apsw.Connection, sql: Statements) -> None:
    """The metadata-term index, filled from existing memories."""
    from ..metadata_search import metadata_index_terms

    _run_script(conn, sql["migration_0004_metadata_terms"])
    for pk, metadata in list(conn.execute("SELECT pk, metadata FROM memories WHERE metadata <> '{}'")):
        try:
            meta = json.loads(metadata)
        except ValueError:
            continue
        terms = metadata_index_terms(meta) if isinstance(meta, dict) else []
        if terms:
            conn.execute(sql["metadata_terms_insert"], {"pk": pk, "terms": json.dumps(terms)})


def migration_0005_vector_codes(conn: apsw.Connection, sql: Statements) -> None:
    """The float32 vec0 index is dropped (schema 7 builds the code index that replaced it)."""
    _run_script(conn, sql["migration_0005_vector_codes"])


def migration_0006_push(conn: apsw.Connection, sql: Statements) -> None:
    """Change tracking (a counter per memory, kept by triggers) and push's id map."""
    _run_script(conn, sql["migration_0006_push"])


def migration_0007_code_index(conn: apsw.Connection, sql: Statements) -> None:
    """The code index as a plain table scanned in memory, calibrated to the stored vectors."""
    from . import vector_index

    _run_script(conn, sql["migration_0007_code_index"])
    row = conn.execute(sql["meta_get"], {"key": "dimensions"}).fetchone()
    if row and row[0]:
        vector_index.rebuild(conn, sql, int(row[0]))


def migration_0008_token_codes(conn: apsw.Connection, sql: Statements) -> None:
    """Token codes for late-interaction rescoring; memories stored before get them from
    ``localmem reindex --tokens`` (texts must be embedded again)."""
    _run_script(conn, sql["migration_0008_token_codes"])


def migration_0009_sync(conn: apsw.Connection, sql: Statements) -> None:
    """A store identity, tombstones, the edge log and per-peer state for ``localmem sync``."""
    _run_script(conn, sql["migration_0009_sync"])


def migration_0010_pull(conn: apsw.Connection, sql: Statements) -> None:
    """``localmem pull``'s state per remote: what it last took of each remote memory."""
    _run_script(conn, sql["migration_0010_pull"])


def migration_0011_hook_ledger(conn: apsw.Connection, sql: Statements) -> None:
    """What ``localmem hook`` keeps between runs: the per-session injection ledger, the
    captured message ids and where each session's transcript was read to."""
    _run_script(conn, sql["migration_0011_hook_ledger"])


def migration_0012_dedup(conn: apsw.Connection, sql: Statements) -> None:
    """Exact-duplicate keys (dedup on write), computed for every memory already stored."""
    from . import dedup_keys

    _run_script(conn, sql["migration_0012_dedup"])
    dedup_keys.backfill(conn, sql)


def migration_0013_forget_purges(conn: apsw.Connection, sql: Statements) -> None:
    """What ``localmem forget`` purged (ids and times, no content), for sync to carry."""
    _run_script(conn, sql["migration_0013_forget_purges"])


def migration_0014_trash(conn: apsw.Connection, sql: Statements) -> None:
    """The trash (what sync, pull and merges delete, kept 30 days) and the purge mark on tombstones."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sync_tombstones)")}
    if "purged" not in columns:  # ALTER TABLE has no IF NOT EXISTS
        _run_script(conn, sql["migration_0014_tombstone_columns"])
    _run_script(conn, sql["migration_0014_trash"])


def migration_0015_sync_hlc(conn: apsw.Connection, sql: Statements) -> None:
    """Hybrid logical clock stamps on every change, tombstone and edge-log entry (derived from
    the times already there), and a memory's deletion logging its edges' removal."""
    try:
        conn.execute("SELECT localmem_wall_ms()").fetchone()
    except apsw.SQLError:  # a bare connection (not opened by ``connect``): the system clock
        register_wall_clock(conn)
    _run_script(conn, sql["migration_0015_sync_edge_log_again"])
    _add_missing_columns(conn, sql["migration_0015_sync_hlc_columns"])
    _run_script(conn, sql["migration_0015_sync_hlc"])


def migration_0016_batched_change_log(conn: apsw.Connection, sql: Statements) -> None:
    """A batch of new memories logs its changes in one statement (storage/change_log.py)."""
    _add_missing_columns(conn, sql["migration_0016_batched_change_log_columns"])
    _run_script(conn, sql["migration_0016_batched_change_log"])


def _add_missing_columns(conn: apsw.Connection, script: str) -> None:
    """Run each ``ALTER TABLE … ADD COLUMN`` of ``script`` where the column is missing (ALTER
    TABLE has no IF NOT EXISTS, and a step may run again on a file set back a version)."""
    for statement in script.split(";"):
        added = _ADDED_COLUMN.search(statement)
        if added is None:
            continue
        table, column = added.groups()
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(statement)


_ADDED_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def migration_0017_sync_seen(conn: apsw.Connection, sql: Statements) -> None:
    """What a store has seen of each memory (per replica, the latest stamp), kept by triggers,
    so a deletion can tell an edit it had seen from one made without seeing it."""
    _run_script(conn, sql["migration_0017_sync_seen"])


def migration_0018_sync_owed_edges(conn: apsw.Connection, sql: Statements) -> None:
    """Edges a sync owes a memory it brought back, noted so a sync killed before writing them
    leaves them to the next one."""
    _run_script(conn, sql["migration_0018_sync_owed_edges"])


def migration_0019_edge_stamps_in_row(conn: apsw.Connection, sql: Statements) -> None:
    """An edge's change number and stamp live in its own row (written with it), its removals in
    ``sync_edge_tombstones``: the edge log's rows move there and the log goes."""
    _add_missing_columns(conn, sql["migration_0019_edge_stamps_in_row_columns"])
    _run_script(conn, sql["migration_0019_edge_stamps_in_row"])


def migration_0020_remote_origins(conn: apsw.Connection, sql: Statements) -> None:
    """Where each memory a push or pull server has came from (pulled from it, or pushed there),
    filled from the id map: a memory whose local id derives from its server id was pulled."""
    conn.create_scalar_function("localmem_pulled_id", pulled_local_id, 2, deterministic=True)
    _run_script(conn, sql["migration_0020_remote_origins"])


MIGRATIONS: tuple[Callable[[apsw.Connection, Statements], None], ...] = (
    migration_0001_initial,
    migration_0002_fulltext,
    migration_0003_threads,
    migration_0004_metadata_terms,
    migration_0005_vector_codes,
    migration_0006_push,
    migration_0007_code_index,
    migration_0008_token_codes,
    migration_0009_sync,
    migration_0010_pull,
    migration_0011_hook_ledger,
    migration_0012_dedup,
    migration_0013_forget_purges,
    migration_0014_trash,
    migration_0015_sync_hlc,
    migration_0016_batched_change_log,
    migration_0017_sync_seen,
    migration_0018_sync_owed_edges,
    migration_0019_edge_stamps_in_row,
    migration_0020_remote_origins,
)
LATEST_VERSION = len(MIGRATIONS)


def schema_version(conn: apsw.Connection) -> int:
    """The file's schema version; 0 for a new, empty file."""
    check_localmem_file(conn)
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return 0
    text = str(row[0])
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise ConfigError(f"the database's schema_version is {text[:40]!r}, not a number: this is not a "
                          "localmem database as localmem writes them; refused")
    return int(text)


def require_current_schema(conn: apsw.Connection) -> None:
    """Refuse (``ConfigError``) a file that is not at this localmem's schema version.

    A read-only store cannot migrate an older file, nor understand a newer one.
    """
    current = schema_version(conn)
    if current > LATEST_VERSION:
        raise ConfigError(
            f"Database schema version {current} is newer than this localmem supports "
            f"({LATEST_VERSION}); upgrade localmem to open it"
        )
    if current < LATEST_VERSION:
        what = "is empty" if current == 0 else f"has schema version {current}"
        raise ConfigError(
            f"The database {what} and needs migrating to version {LATEST_VERSION}, which a "
            "read-only store cannot do; open it once without read_only where it can be written"
        )


def migrate(conn: apsw.Connection, sql: Statements, *, target: int = LATEST_VERSION,
            home: str | None = None) -> int:
    """Bring the schema up to ``target``; returns the version reached. ``home``: the file's path,
    opened for writing: a byte copy of a store found there takes a new identity (identity.py)."""
    current = schema_version(conn)
    if current > LATEST_VERSION:
        raise ConfigError(
            f"Database schema version {current} is newer than this localmem supports "
            f"({LATEST_VERSION}); upgrade localmem to open it"
        )
    for version in range(current + 1, target + 1):
        # One transaction per step: an interrupted step leaves the previous
        # version intact. The write lock is taken first and the version read
        # again under it, so processes opening a new file at once migrate it once.
        with transaction(conn):
            if schema_version(conn) >= version:
                continue
            MIGRATIONS[version - 1](conn, sql)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
    if home is not None and max(current, target) >= 9:  # identities came with schema 9
        claim_home(conn, sql, home)
    return max(current, target)
