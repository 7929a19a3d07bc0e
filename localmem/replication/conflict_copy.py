"""Conflict copies: the losing version of a memory changed on both sides, kept as a memory of
its own that the winner supersedes. ``localmem sync`` and ``localmem pull`` make them alike,
so recall, the UI and a later sync treat a copy the same whichever made it."""

from __future__ import annotations

from typing import Any

from .sync_rules import CONFLICT_RELATION, conflict_copy_id, memory_version

CONFLICT_KEY = "sync_conflict"  # the metadata key that marks a conflict copy (and names its memory)


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
