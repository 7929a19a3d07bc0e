"""The deletions of a pull: memories the server no longer has, deleted here only when the server
answers 404 for them, they came from that server, and they are unchanged here since they were
last in step; each goes to the trash (``localmem trash``), compare-and-set: a memory changed
here while the pull ran is kept, as one changed before it is."""

from __future__ import annotations

from typing import Any

from ..storage.database import transaction
from ..trash import move_to_trash
from .pull_merge import ChangedMeanwhile, expect_version, same_instant
from .pull_state import PENDING, local_id_for

# The pull (``pull.Puller``) these run for; not imported, since pull imports this module.
Puller = Any


def delete_memories(self: Puller) -> None:
    gone = self._deleted_there()
    self.phase("deleting", len(gone))
    forget: list[tuple[str, str]] = []
    listed_after_all = 0
    for rid, entry in gone:
        local_id = entry["local_id"]
        if entry["present"]:
            # Absent from the listing is not proof (its count can match by chance while a memory
            # is written and another left out): the server is asked for the memory itself.
            there = _still_there(self, rid)
            if there is None or there:
                listed_after_all += bool(there)
                self.advance()
                continue
        if not entry["present"]:
            forget.append((local_id, rid))  # gone on both sides
        elif not self._came_from_here(rid, entry):
            self._own.append(local_id)  # written here: the server losing it deletes nothing here
        elif (entry["change_seq"] or 0) > entry["pushed_seq"] or not _trash_if_unchanged(self, entry):
            self.summary.conflicts += 1
            self._kept.append(local_id)
            forget.append((local_id, rid))
        else:
            forget.append((local_id, rid))
        self.advance()
    self.state.forget(forget)
    _stopped_writes_deleted_there(self)
    if listed_after_all:
        self.summary.warnings.append(f"{listed_after_all} memories missing from the listing are still on the "
                                     "server (GET /memory answered): not deleted here")


def _stopped_writes_deleted_there(self: Puller) -> None:
    """Memories a stopped pull wrote and never recorded (noted ``PENDING`` with the ``updated_at``
    written), gone from the server since: to the trash when unchanged here (its ``updated_at`` as
    written), else kept, and the next push creates them there again. A kept one is recorded as pulled
    from the server (the stopped pull never did), so that push keeps its origin and the server's next
    delete reaches it as it reaches any pulled memory."""
    stale = [(rid, seen[PENDING]) for rid, seen in self._seen.items() if PENDING in seen
             and rid not in self.listing and rid not in self.unreadable and rid not in self.map]
    done, kept = [], []
    for rid, written_at in stale:
        there = _still_there(self, rid)
        if there is None or there:
            continue
        local_id = local_id_for(self.client.url, rid)
        row = self.state.local_rows([local_id]).get(local_id)
        if row is not None and not (written_at and same_instant(row["updated_at"], written_at)
                                    and _trash_if_unchanged(self, {"local_id": local_id,
                                                                   "change_seq": row["change_seq"]})):
            self.summary.conflicts += 1
            self._kept.append(local_id)
            kept.append((local_id, rid))
        done.append((local_id, rid))
    self.state.record_pulled(kept)
    self.state.forget(done)


def _trash_if_unchanged(self: Puller, entry: dict[str, Any]) -> bool:
    """Move the memory to the trash if it is still the version the pull read; False when it
    changed here meanwhile (then it is kept)."""
    store = self.store
    if self.before_write is not None:
        self.before_write(entry["local_id"])
    try:
        with store.lock, transaction(store.conn):
            expect_version(store, entry["local_id"], entry["change_seq"])
            if move_to_trash(store, entry["local_id"], f"pull from {self.client.url}"):
                self.summary.memories.deleted += 1
    except ChangedMeanwhile:
        return False
    return True


def _still_there(self: Puller, remote_id: str) -> bool | None:
    """Whether the server has the memory (None: it did not say; reported)."""
    response = self.client.get(f"/memory/{self.client.quoted(remote_id)}")
    if response.status == 404:
        return False
    if response.ok:
        return True
    self.summary.fail("memory", remote_id, f"not deleted here: GET /memory answered {response.status}: "
                                           f"{response.message()}")
    return None


def deleted_since_stopped(self: Puller, items: dict[str, tuple[Any, dict[str, Any]]], there: set[str]) -> None:
    """Memories a stopped pull wrote (noted ``PENDING``) and that were deleted here since: recorded
    as deleted here (the next push deletes them there), not pulled again; taken out of ``items``."""
    noted = [lid for lid, (memory, _) in items.items()
             if lid not in there and PENDING in self._seen.get(memory.remote_id, {})]
    gone = self.state.deleted_here(noted)
    if gone:
        self._record({lid: items.pop(lid)[0] for lid in gone}, created=True)
        self.summary.warnings.append(f"{len(gone)} memories an interrupted pull wrote were deleted here since: "
                                     "not pulled again (the next push deletes them on the server)")
