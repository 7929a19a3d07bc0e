"""Retractions at capture: a turn that takes back or corrects earlier ones supersedes them.

"Actually, let's not ...", "scratch that", "no wait, use X instead" (the rules
file's ``retraction_patterns``) open a turn that makes what came just before
it stale. Capture links each such turn to the turns it retracts with the
store's own supersession edge (``old -[INVALIDATED_BY]-> retraction``), so
current-state recall, and therefore every hook injection, hides the
retracted turn and shows the retraction in its place; history recall
(``include_superseded``) still has both.

Which turns: walking back through the session's current captured turns, the
nearest earlier turn of the retraction's own role and the other role's turns
after it (the user's plan and the assistant's answer to it, for a user's
"scratch that"), at most ``MAX_RETRACTED_MESSAGES`` messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import MemoryStore

MAX_RETRACTED_MESSAGES = 4
_ROWS = 24  # memories read back (a message may be stored in several parts)


def retracted_by(store: "MemoryStore", session_id: str, message_uuid: str, role: str,
                 timestamp: str) -> list[str]:
    """The memory ids a retraction turn takes back (callers hold ``store.lock``)."""
    rows = store.conn.execute(store.sql["hook_session_turns_before"], {
        "session_id": session_id, "before": timestamp, "message_uuid": message_uuid, "limit": _ROWS}).fetchall()
    taken: list[str] = []
    messages: list[str] = []
    reached_own_role = False
    for memory_id, turn_role, turn_uuid, _ in rows:  # newest first, a message's parts together
        if turn_uuid not in messages:
            if reached_own_role or len(messages) == MAX_RETRACTED_MESSAGES:
                break
            messages.append(turn_uuid)
        taken.append(memory_id)
        reached_own_role = reached_own_role or turn_role == role
    return taken if reached_own_role else []


def link_retraction(store: "MemoryStore", session_id: str, message_uuid: str, role: str,
                    retraction_id: str) -> int:
    """Supersede what ``retraction_id`` (the retraction's first memory) takes back; how many
    memories (callers hold ``store.lock``, inside the capture's write transaction)."""
    timestamp = store.get(retraction_id)["timestamp"]
    linked = 0
    for old_id in retracted_by(store, session_id, message_uuid, role, timestamp):
        if old_id == retraction_id:
            continue
        store.supersede(old_id, retraction_id, relation="INVALIDATED_BY",
                        reason="retracted or corrected later in the same session")
        linked += 1
    return linked
