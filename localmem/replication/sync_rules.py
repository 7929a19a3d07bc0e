"""The merge rules of ``localmem sync``, as small pure functions.

A memory's *version* is its ``updated_at`` and a digest of every field a sync
carries (``last_accessed`` is not one: recall writes it): what tells two versions
apart. What orders them is the hybrid logical clock stamp of the change that made
each (``hlc.py``; carried unchanged from store to store), then the version, so two
stores deciding alone pick the same winner, and any sync order converges on the
latest version of each memory. Versions from a peer too old to stamp its changes
order by ``updated_at``, as before. What a plain last-writer-wins merge loses, a
sync keeps:

* changed on both sides since the two last agreed (their *base*), or on one side
  only but stamped before the other side's version (so not made after seeing it): the later
  version wins and the earlier one is kept as a new memory the winner
  supersedes (a *conflict copy*, with an id derived from the memory and the
  losing version, so every store that meets the same conflict makes the same copy); but not
  a version the other side had seen and moved on from (its summary covers it, its own version
  stamped after: an import, then a first sync with the exporter), which is copied over;
* a delete and a record: a deletion carries the version it deleted, that
  version's stamp, and what its store had seen of the memory (``seen.py``); a
  version the deleting store had seen loses to the delete; one it had not seen
  (an edit made concurrently, whatever its stamp) survives (the memory comes back,
  and the summary says so). A deletion without stamps: by ``updated_at`` as before;
* a purge wins over every version;
* edges: a set; of an edge's write and its removal, the later stamp wins.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .hlc import EARLIEST, stamp_key
from .seen import Seen, replica

# The fields a sync copies (everything a memory has but its vector and last_accessed).
SYNCED_FIELDS = ("content", "summary", "type", "confidence", "importance", "tags", "timestamp",
                 "updated_at", "t_valid", "t_invalid", "archived", "metadata", "context",
                 "relevance_score")
CONFLICT_NAMESPACE = uuid.UUID("5d1f7c3e-8a0b-4c39-9a57-2f4f0e6b1c10")
CONFLICT_RELATION = "INVALIDATED_BY"  # conflict copy -> the version that won
DERIVED_REPLICA = "0" * 32  # the store part of stamps derived on upgrade to schema 15, from every store
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


_NO_VERSION = Version(_EPOCH, "")


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
    hlc: str | None = None  # the clock stamp of the change that made this record or this deletion
    deleted_hlc: str | None = None  # a deletion: the stamp of the version it deleted
    seen: Seen = Seen()  # what this side has seen of the memory (seen.py); a deletion: its deleter's

    @property
    def stamp(self) -> str | None:
        """The stamp of the version this side holds, or of the one it deleted."""
        return self.hlc if self.record is not None else self.deleted_hlc

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


def orders_after(stamp: str | None, version: Version | None, other_stamp: str | None,
                 other_version: Version | None, horizon_ms: int | None) -> bool:
    """Whether the first change is the later one: by clock stamps (then versions) when both
    have one, by versions (``updated_at``, then digest) otherwise."""
    mine, theirs = stamp_key(stamp, horizon_ms), stamp_key(other_stamp, horizon_ms)
    if mine is not None and theirs is not None and mine != theirs:
        return mine > theirs
    return (version or _NO_VERSION) > (other_version or _NO_VERSION)


def decide(source: MemoryState, target: MemoryState, base: str | None,
           horizon_ms: int | None = None) -> Decision:
    """Merge one memory seen changed on ``source`` with its state on ``target``. ``horizon_ms``:
    now plus the bounded skew on the store that decides (stamps past it order nothing)."""
    mine, theirs = source.version, target.version
    if source.purged != target.purged:  # a purge is final, whatever the clocks say
        if source.purged:
            return Decision(None, source, "deleted", winner=mine)
        return Decision(target, None, "deleted", winner=theirs)
    # Two deletions made in the same millisecond have the same version; what they deleted may differ.
    if mine is None or (mine == theirs and (source.exists or source.deleted_hlc == target.deleted_hlc)):
        return Decision(None, None, None, winner=mine)
    if theirs is None:  # the target never saw it: copy the record, or the tombstone so it travels on
        return Decision(None, source, "copied" if source.exists else "tombstone", winner=mine)
    if source.exists and target.exists:
        changed_here = base != mine.text()
        changed_there = base != theirs.text()
        if changed_here and changed_there and _built_on(target, source, horizon_ms):
            changed_here = False  # the source's version is one the target had seen and moved on from
        elif changed_here and changed_there and _built_on(source, target, horizon_ms):
            changed_there = False
        if changed_here != changed_there and not _stamped_after(*((source, target) if changed_here
                                                                  else (target, source)), horizon_ms):
            # Changed since the base, but stamped before the other side's version: not made after
            # seeing it (an edit kept over a delete brings in such a concurrent version), so a
            # conflict like any other, ordered by the clock; copying it would undo the other.
            changed_here = changed_there = True
        if changed_here and changed_there:
            later = orders_after(source.hlc, mine, target.hlc, theirs, horizon_ms)
            win, lose = (source, target) if later else (target, source)
            return Decision(None if win is source else win, None if win is target else win,
                            "conflict", conflict_loser=lose.record, winner=win.version)
        if not changed_here:  # only the target moved on: the source is the stale one
            return Decision(target, None, "copied_back", winner=theirs)
        return Decision(None, source, "copied", winner=mine)
    # A delete on one side, a record on the other, decided by what the deleter had seen (carried
    # by the deletion, the same on every store, so any order of syncs converges): a version it
    # had seen loses to the delete; one it had not seen survives (and says so). Without stamps
    # (an older peer): by updated_at. Two deletions: the one that deleted the later version.
    record, deletion = (source, target) if source.exists else (target, source)
    if not source.exists and not target.exists:  # two deletions
        return _two_deletions(source, target, mine, theirs, horizon_ms)
    record_key, deleted_key = stamp_key(record.hlc, horizon_ms), stamp_key(deletion.deleted_hlc, horizon_ms)
    if record.record is not None and record_key is not None and deleted_key is not None:
        later = deletion if _seen_by_deleter(record, deletion) else record
    elif record.record is not None and deletion.deleted_updated_at is not None:
        edited_after = moment(record.record.get("updated_at")) > moment(deletion.deleted_updated_at)
        later = record if edited_after else deletion
    else:
        later = source if orders_after(source.hlc, mine, target.hlc, theirs, horizon_ms) else target
    if later.exists:
        return Decision(None if later is source else later, None if later is target else later,
                        "edit_kept", winner=later.version)
    return Decision(None if later is source else later, None if later is target else later,
                    "deleted", winner=later.version)


def _stamped_after(changed: MemoryState, other: MemoryState, horizon_ms: int | None) -> bool:
    """Whether ``changed`` orders after ``other`` by their stamps (True without stamps: a peer too
    old to send them is trusted as before)."""
    mine, theirs = stamp_key(changed.hlc, horizon_ms), stamp_key(other.hlc, horizon_ms)
    return mine is None or theirs is None or mine > theirs


def _built_on(newer: MemoryState, older: MemoryState, horizon_ms: int | None) -> bool:
    """Whether ``newer``'s side had seen ``older``'s version and holds a later one: its summary, or
    its own version's stamp (a store's stamps of one memory are in order: ``seen.py``), holds an
    entry of the store that made ``older``'s version at or after that stamp, and its own version
    is stamped after it. So two stores that never agreed on the memory (an import, then a
    first sync with the exporter; a version that came through a third store) copy the later one
    over instead of keeping the older as a conflict copy nobody made. Bounded as stamps are: the
    floor (folded stores) says nothing about one version, an entry or a stamp past the skew bound
    orders nothing, and derived stamps (stores older than schema 15) share one store part without
    being one store's history; each of those stays a conflict, which loses nothing."""
    new_key, old_key = stamp_key(newer.hlc, horizon_ms), stamp_key(older.hlc, horizon_ms)
    if new_key in (None, EARLIEST) or old_key in (None, EARLIEST) or new_key <= old_key:
        return False
    assert older.hlc is not None
    maker = replica(older.hlc)
    return maker != DERIVED_REPLICA and any(
        replica(entry) == maker and entry >= older.hlc and stamp_key(entry, horizon_ms) != EARLIEST
        for entry in (*newer.seen.stamps, newer.hlc))


def _seen_by_deleter(record: MemoryState, deletion: MemoryState) -> bool:
    """Whether the store that made ``deletion`` had seen ``record``'s version: it is the deleted
    version, or an earlier one of the replica that made that version, or one the deleter had
    seen otherwise (its own earlier versions, and what syncs merged into them). Not the clock:
    an edit made without seeing the delete survives it whichever stamp is later."""
    assert record.record is not None and record.hlc is not None and deletion.deleted_hlc is not None
    if deletion.hlc is not None and record.hlc > deletion.hlc and record.hlc != deletion.deleted_hlc and (
            replica(record.hlc) == replica(deletion.hlc) or record.seen.covers(deletion.hlc)):
        # Made after the delete, by the deleting store or by one that had taken the delete in (its
        # summary holds the deletion's stamp): an import there of the version deleted, say.
        return False
    if record.record.get("updated_at") == deletion.deleted_updated_at or record.hlc == deletion.deleted_hlc:
        return True
    if replica(record.hlc) == replica(deletion.deleted_hlc) and record.hlc < deletion.deleted_hlc:
        return True
    return deletion.seen.covers(record.hlc)


def _two_deletions(source: MemoryState, target: MemoryState, mine: Version | None, theirs: Version | None,
                   horizon_ms: int | None) -> Decision:
    """Two deletions of one memory: the one that deleted the later version wins, so the deletion
    both stores keep still covers every version either deleter had seen (keeping the later-stamped
    one instead could forget a later version deleted by the other, which then came back). The same
    version deleted on both, or a deletion without stamps: the later deletion by the clock."""
    first, second = stamp_key(source.deleted_hlc, horizon_ms), stamp_key(target.deleted_hlc, horizon_ms)
    if first is not None and second is not None and first != second:
        later = source if first > second else target
    else:
        later = source if orders_after(source.hlc, mine, target.hlc, theirs, horizon_ms) else target
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
    hlc: str | None = None  # the clock stamp of the write or the removal

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


def decide_edge(source: EdgeState, target: EdgeState,
                horizon_ms: int | None = None) -> tuple[EdgeState | None, EdgeState | None]:
    """(the state the source must take, the state the target must take): the later wins."""
    mine, theirs = source.version, target.version
    if mine is None or mine == theirs:
        return None, None
    if theirs is None or orders_after(source.hlc, mine, target.hlc, theirs, horizon_ms):
        return None, source
    return target, None
