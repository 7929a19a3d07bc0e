"""The trash: every memory an automatic deletion removes (sync, pull, a merge) is kept here
first, with its edges, restorable for ``KEEP_DAYS`` days (``localmem trash``).

``move_to_trash`` is what those deletions call instead of ``MemoryStore.delete``: one
transaction copies the record and its edges into the ``trash`` table and deletes the
memory, so a bug in a merge rule is an incident a user can undo, not a loss.
``restore`` puts a memory back (with the edges whose other end is still there) as a new
edit, so the next sync carries it back to peers that deleted it too. ``purge`` is the one
deletion that keeps nothing: no trash entry, SQLite's ``secure_delete`` on while the rows
go, and the tombstone marked purged, so a sync makes every peer purge it as well.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .errors import NotFoundError, ValidationError
from .replication.conflict_copy import relink_conflict_copies
from .storage import edges as edge_store
from .storage.database import read_transaction, transaction
from .storage.records import rows_as_dicts
from .timeparse import format_timestamp
from .validation import validate_uuid

if TYPE_CHECKING:
    from .store import MemoryStore

KEEP_DAYS = 30
MAX_LISTED = 1000
# What a restored memory is stored with: its record but its times of change (a restore is a new edit).
RESTORED_FIELDS = ("summary", "type", "confidence", "importance", "tags", "timestamp", "t_valid", "t_invalid",
                   "archived", "metadata", "context", "relevance_score")


def _expire(store: MemoryStore) -> None:
    cutoff = format_timestamp(store.now() - timedelta(days=KEEP_DAYS))
    store.conn.execute(store.sql["trash_expire"], {"cutoff": cutoff})


def move_to_trash(store: MemoryStore, memory_id: str, reason: str) -> bool:
    """Delete the memory, keeping it (and its edges) in the trash; False when it is not there."""
    memory_id = validate_uuid(memory_id)
    with store.lock, transaction(store.conn):
        row = store.conn.execute("SELECT pk FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return False
        record = store.get(memory_id)
        edges = [[e["src_id"], e["type"], e["dst_id"], e["strength"], e["updated_at"], e["properties"]]
                 for e in rows_as_dicts(store.conn.execute(store.sql["trash_memory_edges"], {"pk": row[0]}))]
        _expire(store)
        store.conn.execute(store.sql["trash_put"], {
            "id": memory_id, "record": json.dumps(record, ensure_ascii=False), "edges": json.dumps(edges),
            "reason": reason[:500], "trashed_at": format_timestamp(store.now())})
        store.delete(memory_id)
    return True


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    record = json.loads(row["record"])
    return {"id": row["id"], "content": record.get("content"), "reason": row["reason"],
            "trashed_at": row["trashed_at"], "edges": len(json.loads(row["edges"])), "record": record}


def trash_entries(store: MemoryStore, limit: int = 100) -> list[dict[str, Any]]:
    """What the trash holds, newest first (at most ``limit``, up to ``MAX_LISTED``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LISTED:
        raise ValidationError(f"limit must be a whole number from 1 to {MAX_LISTED}")
    with store.lock, read_transaction(store.conn):
        return [_entry(row) for row in rows_as_dicts(store.conn.execute(store.sql["trash_list"], {"limit": limit}))]


def restore(store: MemoryStore, memory_id: str) -> dict[str, Any]:
    """Put a trashed memory back, with its edges whose other end exists; returns the record."""
    memory_id = validate_uuid(memory_id)
    with store.lock, transaction(store.conn):
        rows = list(rows_as_dicts(store.conn.execute(store.sql["trash_get"], {"id": memory_id})))
        if not rows:
            raise NotFoundError(f"memory {memory_id} is not in the trash")
        if store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone():
            raise ValidationError(f"memory {memory_id} is in the store again; the trashed copy was left as it is")
        record = json.loads(rows[0]["record"])
        fields = {name: record[name] for name in RESTORED_FIELDS if record.get(name) is not None}
        # Changed now: a restore is an edit made after the delete, so peers that deleted it take it back.
        store.store(record["content"], id=memory_id, updated_at=format_timestamp(store.now()), **fields)
        for src_id, relation, dst_id, strength, updated_at, properties in json.loads(rows[0]["edges"]):
            try:
                src, dst = edge_store.edge_ends(store.conn, src_id, dst_id)
            except NotFoundError:
                continue  # its other end is gone (deleted, or still in the trash)
            edge_store.upsert_edge(store.conn, store.sql, src, dst, relation, float(strength),
                                   updated_at or format_timestamp(store.now()), json.loads(properties or "{}"))
        # A peer's delete may have removed a conflict copy's link before this store trashed it (the
        # winner's copies, or this memory's own link when it is a copy).
        relink_conflict_copies(store, [memory_id])
        store.conn.execute(store.sql["trash_remove"], {"id": memory_id})
        return store.get(memory_id)


def empty_trash(store: MemoryStore) -> int:
    """Remove everything from the trash for good; returns how many memories that was."""
    with store.lock, transaction(store.conn):
        count = store.conn.execute("SELECT count(*) FROM trash").fetchone()[0]
        store.conn.execute(store.sql["trash_expire"], {"cutoff": "9999-12-31T23:59:59.999999+00:00"})
    return int(count)


def purge(store: MemoryStore, memory_id: str) -> bool:
    """Delete a memory for good: no trash entry (an existing one is removed too), its rows
    overwritten on disk (``secure_delete``), and its tombstone marked purged, which a sync
    carries so every peer purges it too. False when there was nothing to purge."""
    memory_id = validate_uuid(memory_id)
    with store.lock:
        before = store.conn.execute("PRAGMA secure_delete").fetchone()[0]
        store.conn.execute("PRAGMA secure_delete = ON")
        try:
            with transaction(store.conn):
                found = store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
                if found:
                    store.delete(memory_id)
                trashed = store.conn.execute(store.sql["trash_get"], {"id": memory_id}).fetchone()
                store.conn.execute(store.sql["trash_remove"], {"id": memory_id})
                store.conn.execute(store.sql["sync_tombstone_purged"], {"id": memory_id})
        finally:
            store.conn.execute(f"PRAGMA secure_delete = {int(before)}")
    return bool(found or trashed)
