"""The merge rules of ``localmem sync``, as small pure functions.

A memory's *version* is its ``updated_at`` and a digest of every field a sync
carries (``last_accessed`` is not one: recall writes it). Versions order by
time, then by digest, so two stores deciding alone pick the same winner, and
any sync order converges on the latest version of each memory (last writer
wins). What a plain last-writer-wins merge loses, a sync keeps:

* changed on both sides since the two last agreed (their *base*): the later
  version wins and the earlier one is kept as a new memory the winner
  supersedes (a *conflict copy*, with an id derived from the memory and the
  losing version, so every store that meets the same conflict makes the same copy);
* a delete and a record: a deletion carries the ``updated_at`` of the version
  it deleted; a record no newer than that loses to the delete, and a record
  edited after it survives (the memory comes back, and the summary says so),
  whatever the deleting machine's clock read; a deletion without it (made
  before schema 13), the later of the two wins;
* a purge wins over every version;
* edges: a union; an edge's removal wins over its write only when it is later.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

# The fields a sync copies (everything a memory has but its vector and last_accessed).
SYNCED_FIELDS = ("content", "summary", "type", "confidence", "importance", "tags", "timestamp",
                 "updated_at", "t_valid", "t_invalid", "archived", "metadata", "context",
                 "relevance_score")
CONFLICT_NAMESPACE = uuid.UUID("5d1f7c3e-8a0b-4c39-9a57-2f4f0e6b1c10")
CONFLICT_RELATION = "INVALIDATED_BY"  # conflict copy -> the version that won
ABSENT = "absent"  # the version of a memory a side holds neither a record nor a tombstone of
_EPOCH = datetime(1, 1, 1, tzinfo=timezone.utc)


def moment(text: str | None) -> datetime:
    """An ISO 8601 time as an aware datetime; unreadable or missing: the earliest time."""
    if not text:
        return _EPOCH
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _EPOCH
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def synced_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of a memory record a sync copies."""
    return {name: record.get(name) for name in SYNCED_FIELDS}


def digest(record: dict[str, Any]) -> str:
    fields = synced_fields(record)
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True, order=True)
class Version:
    """When a memory (or edge) was last written, and what it then held."""

    at: datetime
    digest: str

    def text(self) -> str:
        return f"{self.at.isoformat(timespec='microseconds')}|{self.digest}"


def memory_version(record: dict[str, Any]) -> Version:
    return Version(moment(record.get("updated_at")), digest(record))


def tombstone_version(deleted_at: str) -> Version:
    # A delete is a version too; its digest sorts below every hex digest of the same instant.
    return Version(moment(deleted_at), "")


def conflict_copy_id(memory_id: str, losing: Version) -> str:
    """The id of the memory that keeps a losing version: the same on every store."""
    return str(uuid.uuid5(CONFLICT_NAMESPACE, f"{memory_id}|{losing.text()}"))


@dataclass(frozen=True)
class MemoryState:
    """One memory on one side: its record, or its tombstone, or neither."""

    id: str
    record: dict[str, Any] | None = None
    deleted_at: str | None = None
    problem: str | None = None  # the stored row could not be read: why
    purged: bool = False  # a deletion made by a purge: it wins over every version, and keeps nothing
    deleted_updated_at: str | None = None  # a deletion: the updated_at of the version it deleted

    @property
    def exists(self) -> bool:
        return self.record is not None

    @property
    def version(self) -> Version | None:
        if self.record is not None:
            return memory_version(self.record)
        if self.deleted_at is not None:
            return tombstone_version(self.deleted_at)
        return None


@dataclass(frozen=True)
class Decision:
    """What to do with one memory. ``to_source``/``to_target``: the state each side must take
    (None: leave it); ``conflict_loser``: the losing record to keep as a conflict copy;
    ``note``: why, for the summary (``copied``, ``conflict``, ``edit_kept``, ``deleted``)."""

    to_source: MemoryState | None
    to_target: MemoryState | None
    note: str | None
    conflict_loser: dict[str, Any] | None = None
    winner: Version | None = None


def decide(source: MemoryState, target: MemoryState, base: str | None) -> Decision:
    """Merge one memory seen changed on ``source`` with its state on ``target``."""
    mine, theirs = source.version, target.version
    if source.purged != target.purged:  # a purge is final, whatever the clocks say
        if source.purged:
            return Decision(None, source, "deleted", winner=mine)
        return Decision(target, None, "deleted", winner=theirs)
    if mine is None or mine == theirs:
        return Decision(None, None, None, winner=mine)
    if theirs is None:  # the target never saw it: copy the record, or the tombstone so it travels on
        return Decision(None, source, "copied" if source.exists else "tombstone", winner=mine)
    if source.exists and target.exists:
        changed_here = base != mine.text()
        changed_there = base != theirs.text()
        if changed_here and changed_there:
            win, lose = (source, target) if mine > theirs else (target, source)
            return Decision(None if win is source else win, None if win is target else win,
                            "conflict", conflict_loser=lose.record, winner=max(mine, theirs))
        if not changed_here:  # only the target moved on: the source is the stale one
            return Decision(target, None, "copied_back", winner=theirs)
        return Decision(None, source, "copied", winner=mine)
    # A delete on one side, a record on the other, decided by what the delete deleted (the same
    # on every store, so any order of syncs converges): a record no newer than the deleted
    # version loses to the delete, one edited after it survives (and says so), whatever the
    # clocks of the two machines read. Two deletions, or one that does not say (made before
    # schema 13): the later wins.
    record, deletion = (source, target) if source.exists else (target, source)
    if record.record is not None and deletion.deleted_updated_at is not None:
        edited_after = moment(record.record.get("updated_at")) > moment(deletion.deleted_updated_at)
        later = record if edited_after else deletion
    else:
        later = source if mine > theirs else target
    if later.exists:
        return Decision(None if later is source else later, None if later is target else later,
                        "edit_kept", winner=later.version)
    return Decision(None if later is source else later, None if later is target else later,
                    "deleted", winner=later.version)


@dataclass(frozen=True)
class EdgeState:
    """One edge (by its ends' ids and type) on one side."""

    key: tuple[str, str, str]
    strength: float | None = None
    updated_at: str | None = None
    properties: str | None = None
    deleted_at: str | None = None

    @property
    def exists(self) -> bool:
        return self.strength is not None

    @property
    def version(self) -> Version | None:
        if self.exists:
            body = json.dumps([self.strength, self.properties], separators=(",", ":"))
            return Version(moment(self.updated_at), hashlib.sha256(body.encode()).hexdigest()[:24])
        if self.deleted_at is not None:
            return Version(moment(self.deleted_at), "")
        return None


def decide_edge(source: EdgeState, target: EdgeState) -> tuple[EdgeState | None, EdgeState | None]:
    """(the state the source must take, the state the target must take): the later wins."""
    mine, theirs = source.version, target.version
    if mine is None or mine == theirs:
        return None, None
    if theirs is None or mine > theirs:
        return None, source
    return target, None
