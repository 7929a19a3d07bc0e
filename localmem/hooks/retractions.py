"""Retractions at capture: a turn that takes back or corrects earlier ones supersedes them.

"Actually, let's not ...", "scratch that", "no wait, use X instead" (the rules
file's ``retraction_patterns``) open a turn that makes what came just before
it stale. Capture links each such turn to the turns it retracts with the
store's own supersession edge (``old -[INVALIDATED_BY]-> retraction``), so
current-state recall, and therefore every hook injection, hides the
retracted turn and shows the retraction in its place; history recall
(``state_mode="history"``) still has both.

Which turns, among the session's last ``WINDOW_MESSAGES`` current captured
messages: the earlier turn of the retraction's own role that shares the most
words with it (the nearest one when none shares a word: "scratch that" names
nothing), and the other role's turns after it that share a word with that
turn (the assistant's "OK, I'll set up MySQL" after the user's "use MySQL").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from ..store import MemoryStore

WINDOW_MESSAGES = 6
_ROWS = 40  # memories read back (a message may be stored in several parts)
_WORD = re.compile(r"[^\W_]{3,}")
_COMMON = frozenset("the and that this with for you your are was were have has had not but let's lets use "
                    "actually instead wait scratch never mind correction what its it's then than from".split())


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text[:4000])} - _COMMON


def retracted_by(store: "MemoryStore", session_id: str, message_uuid: str, role: str, timestamp: str,
                 text: str) -> list[str]:
    """The memory ids a retraction turn takes back (callers hold ``store.lock``)."""
    rows = store.conn.execute(store.sql["hook_session_turns_before"], {
        "session_id": session_id, "before": timestamp, "message_uuid": message_uuid, "limit": _ROWS}).fetchall()
    messages: dict[str, dict[str, Any]] = {}  # newest first
    for memory_id, turn_role, turn_uuid, content in rows:
        if turn_uuid not in messages:
            if len(messages) == WINDOW_MESSAGES:
                break
            messages[turn_uuid] = {"role": turn_role, "ids": [], "words": set()}
        messages[turn_uuid]["ids"].append(memory_id)
        messages[turn_uuid]["words"] |= _words(content)
    order = list(messages.values())
    own = [(len(m["words"] & _words(text)), -index) for index, m in enumerate(order) if m["role"] == role]
    if not own:
        return []
    target = -max(own)[1]  # most shared words, the nearest on a tie
    taken = list(order[target]["ids"])
    for later in order[:target]:
        if later["role"] != role and later["words"] & order[target]["words"]:
            taken.extend(later["ids"])
    return taken


def link_retraction(store: "MemoryStore", session_id: str, message_uuid: str, role: str,
                    retraction_id: str, refused: list[str]) -> int:
    """Supersede what ``retraction_id`` (the retraction's first memory) takes back; how many
    memories (callers hold ``store.lock``, inside the capture's write transaction). A link the
    store refuses is described in ``refused``."""
    retraction = store.get(retraction_id)
    linked = 0
    for old_id in retracted_by(store, session_id, message_uuid, role, retraction["timestamp"],
                               retraction["content"]):
        if old_id == retraction_id:
            continue
        try:  # a savepoint inside capture's transaction: one refused link does not undo the batch
            store.supersede(old_id, retraction_id, relation="INVALIDATED_BY",
                            reason="retracted or corrected later in the same session")
        except (NotFoundError, ValidationError) as exc:
            refused.append(f"{old_id}: {exc}"[:200])
            continue
        linked += 1
    return linked
