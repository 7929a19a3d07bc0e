"""What the hook remembers in the store between runs (migration 11's tables).

``injected``: the per-session ledger of recall injection. ``captured``: the
transcript messages capture stored, claimed inside the transaction that
stores them. ``transcript offsets``: where each session's transcript was read
to. Callers hold the store's lock (``store.lock``) around these.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Iterable

from ..storage.database import transaction
from ..timeparse import format_timestamp

if TYPE_CHECKING:
    from ..store import MemoryStore


def already_injected(store: "MemoryStore", session_id: str, memory_ids: list[str]) -> set[str]:
    rows = store.conn.execute(store.sql["hook_injected_ids"],
                              {"session_id": session_id, "ids": json.dumps(memory_ids)})
    return {row[0] for row in rows}


LEDGER_DAYS = 30  # ledger rows older than this are dropped when a session starts


def record_injected(store: "MemoryStore", session_id: str, memory_ids: Iterable[str], *,
                    prune: bool = False) -> None:
    """Record an injection; ``prune`` (at session start) also drops rows older than ``LEDGER_DAYS``."""
    now = store.now()
    with transaction(store.conn):
        store.conn.executemany(store.sql["hook_injected_insert"], [
            {"session_id": session_id, "memory_id": m, "now": format_timestamp(now)} for m in memory_ids])
        if prune:
            store.conn.execute(store.sql["hook_injected_prune"],
                               {"before": format_timestamp(now - timedelta(days=LEDGER_DAYS))})


def forget_injected(store: "MemoryStore", session_id: str) -> None:
    with transaction(store.conn):
        store.conn.execute(store.sql["hook_injected_forget"], {"session_id": session_id})


def captured_among(store: "MemoryStore", message_uuids: list[str]) -> set[str]:
    rows = store.conn.execute(store.sql["hook_captured_existing"], {"uuids": json.dumps(message_uuids)})
    return {row[0] for row in rows}


def claim_message(store: "MemoryStore", message_uuid: str, session_id: str, memory_ids: list[str]) -> bool:
    """Record a message as captured (inside the caller's write transaction); False when it already was."""
    store.conn.execute(store.sql["hook_captured_claim"], {
        "message_uuid": message_uuid, "session_id": session_id, "memory_ids": json.dumps(memory_ids),
        "now": format_timestamp(store.now())})
    return store.conn.changes() == 1


def set_claimed_memories(store: "MemoryStore", message_uuid: str, memory_ids: list[str]) -> None:
    """The memories a claimed message is held by, once written (a part deduplicated to a stored memory is
    held by that one); inside the caller's write transaction."""
    store.conn.execute(store.sql["hook_captured_memory_ids"], {"message_uuid": message_uuid,
                                                               "memory_ids": json.dumps(memory_ids)})


def captured_count(store: "MemoryStore", session_id: str) -> int:
    return int(store.conn.execute(store.sql["hook_captured_count"], {"session_id": session_id}).fetchone()[0])


def transcript_offset(store: "MemoryStore", session_id: str, path: str) -> int:
    """Where the last capture of this session stopped reading ``path`` (0: from the start; negative:
    inside a line too long to keep, ``transcript.TranscriptRead``)."""
    row = store.conn.execute(store.sql["hook_transcript_get"], {"session_id": session_id}).fetchone()
    return int(row[1]) if row and row[0] == path else 0


def set_transcript_offset(store: "MemoryStore", session_id: str, path: str, offset: int,
                          restarted: bool) -> None:
    """(Inside the caller's write transaction.)"""
    store.conn.execute(store.sql["hook_transcript_set"], {
        "session_id": session_id, "path": path, "offset": offset, "restarted": int(restarted),
        "now": format_timestamp(store.now())})


def has_unscoped_memories(store: "MemoryStore") -> bool:
    """Whether some memory carries no ``project:`` tag (two counts, no scan of the text)."""
    return bool(store.conn.execute(store.sql["hook_unscoped_exists"]).fetchone()[0])
