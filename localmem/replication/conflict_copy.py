"""Conflict copies: the losing version of a memory changed on both sides, kept as a memory of
its own that the winner supersedes. ``localmem sync`` and ``localmem pull`` make them alike,
so recall, the UI and a later sync treat a copy the same whichever made it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..storage import edges as edge_store
from ..storage.records import rows_as_dicts
from .sync_rules import CONFLICT_RELATION, EdgeState, MemoryState, conflict_copy_id, memory_version

if TYPE_CHECKING:
    from ..store import MemoryStore

CONFLICT_KEY = "sync_conflict"  # the metadata key that marks a conflict copy (and names its memory)
CONFLICT_LINK = {"reason": "sync conflict"}  # the properties that mark a sync's link from a copy to its winner


def conflict_copy_record(memory_id: str, losing: dict[str, Any], winner_at: str, kept_because: str) -> dict[str, Any]:
    """The record of the copy that keeps ``losing`` (a version of ``memory_id``): an id derived
    from the memory and the losing version (every store meeting the same conflict makes the same
    copy), marked superseded by the winner as ``supersede`` marks a replaced memory, so recall
    shows the winner and hides the copy."""
    copy_id = conflict_copy_id(memory_id, memory_version(losing))
    metadata = dict(losing.get("metadata") or {})
    metadata.update({"deprecated": True, "superseded_by": memory_id, "supersede_relation": CONFLICT_RELATION,
                     CONFLICT_KEY: {"memory_id": memory_id, "kept_because": kept_because}})
    return {**losing, "id": copy_id, "metadata": metadata, "t_invalid": winner_at}


def is_conflict_copy(state: MemoryState) -> bool:
    """Whether ``state`` is a conflict copy naming the memory it lost to (a peer's rows are not
    trusted: a malformed marker makes no copy)."""
    metadata = state.record.get("metadata") if state.record is not None else None
    marker = metadata.get(CONFLICT_KEY) if isinstance(metadata, dict) else None
    return isinstance(marker, dict) and isinstance(marker.get("memory_id"), str) and marker["memory_id"] != state.id


def conflict_link(copy: MemoryState) -> EdgeState:
    """The edge a sync makes on both sides from a conflict copy (``is_conflict_copy``) to the
    memory that won: the same on every store (stamped as the copy is), so the two compare equal."""
    assert copy.record is not None
    original = copy.record["metadata"][CONFLICT_KEY]["memory_id"]
    return EdgeState((copy.id, CONFLICT_RELATION, original), strength=0.9, updated_at=copy.record.get("t_invalid"),
                     properties=json.dumps(CONFLICT_LINK), hlc=copy.hlc)


def is_conflict_link(edge: EdgeState) -> bool:
    """Whether ``edge`` is a sync's conflict link (made by the sync for both sides, not received)."""
    if edge.key[1] != CONFLICT_RELATION or not isinstance(edge.properties, str) or len(edge.properties) > 100:
        return False
    try:
        return json.loads(edge.properties) == CONFLICT_LINK
    except ValueError:
        return False


def relink_conflict_copies(store: MemoryStore, memory_ids: list[str],
                           which: str = "conflict_copies_naming") -> list[tuple[str, str, str]]:
    """Link every conflict copy held here that names one of ``memory_ids`` (memories a ``trash
    restore`` or an import has just put back), or is one of them, to the memory it names, with
    the sync's ``conflict_link`` stamped now: the delete of the winner removed the link (and
    logged the removal), and a link written after it is what the next sync keeps and carries to
    the peer. ``which`` is the statement that picks the copies (a sync bringing a memory back
    over its delete picks only those whose link this store removed itself:
    ``sync_conflict_copies_unlinked_here``). Inside the caller's transaction; returns the links
    written (copy id, relation, winner id)."""
    if not memory_ids:
        return []
    return _link(store, list(rows_as_dicts(store.conn.execute(store.sql[which], {"ids": json.dumps(memory_ids)}))))


def link_to_superseding(store: MemoryStore) -> int:
    """Link every conflict copy held here to the memory its ``metadata.superseded_by`` names, where
    no ``INVALIDATED_BY`` edge joins them (a pull took the copy from a server that had lost the
    link with the winner: docs/pull.md), with the sync's ``conflict_link`` stamped as the copy is,
    so the two marks recall reads agree and the next push sends the link. Inside the caller's
    transaction; returns how many links were written."""
    rows = list(rows_as_dicts(store.conn.execute(store.sql["conflict_copies_unlinked_to_superseding"])))
    return len(_link(store, rows))


def _link(store: MemoryStore, rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    links = []
    for row in rows:
        record = {"metadata": json.loads(row["metadata"]), "t_invalid": row["t_invalid"]}
        link = conflict_link(MemoryState(row["id"], record=record))
        assert link.strength is not None and link.updated_at is not None
        edge_store.upsert_edge(store.conn, store.sql, row["copy_pk"], row["winner_pk"], CONFLICT_RELATION,
                               link.strength, link.updated_at, json.loads(link.properties or "{}"))
        links.append(link.key)
    return links
