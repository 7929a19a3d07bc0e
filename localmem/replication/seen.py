"""What a store has seen of one memory: a bounded summary of the versions it held or merged.

Kept per memory id in ``sync_seen`` (schema 16; triggers add the stamp of every version a
store replaces or deletes) and joined by every sync that merges the memory, so it is
transitive: a store that took a version from another has seen what that store had seen of it.

A replica (the store identity ending a stamp) stamps its versions of one memory in order, so
its latest stamp seen covers its earlier ones: the summary is, per replica, the latest stamp
seen. That is what decides an edit against a delete by causality instead of the clock: an edit
whose stamp the deleting store had seen (covered here) loses to the delete; one it had not seen
was made concurrently and survives, whichever stamp is later.

Bounded by construction: at most ``MAX_REPLICAS`` entries; past that, the oldest fold into a
*floor* that covers every stamp up to it from any replica (an edit from a folded replica then
counts as seen: a delete sends it to the trash, restorable, rather than letting it bring the
memory back).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .hlc import valid_stamp

MAX_REPLICAS = 16  # the same bound as the triggers' (sql/migration_0017_sync_seen.sql)
FLOOR = "floor"  # the replica name of the floor row


def replica(stamp: str) -> str:
    return stamp[27:]


@dataclass(frozen=True)
class Seen:
    """Per replica, the latest stamp seen (sorted), and the floor (None: nothing folded)."""

    stamps: tuple[str, ...] = ()
    floor: str | None = None

    def covers(self, stamp: str | None) -> bool:
        """Whether the version stamped ``stamp`` is one this summary has seen."""
        if not stamp:
            return False
        if self.floor is not None and stamp <= self.floor:
            return True
        mine = replica(stamp)
        return any(replica(s) == mine and stamp <= s for s in self.stamps)

    def rows(self) -> list[tuple[str, str]]:
        """(replica, stamp) rows as ``sync_seen`` keeps them."""
        rows = [(replica(s), s) for s in self.stamps]
        return rows + ([(FLOOR, self.floor)] if self.floor is not None else [])


def join(summaries: Iterable[Seen], stamps: Iterable[str | None] = ()) -> Seen:
    """Everything any of ``summaries`` saw, and ``stamps``; capped as the triggers cap.
    Commutative and associative (the cap keeps the latest entries), so stores that join the
    same summaries in any order hold the same one."""
    latest: dict[str, str] = {}
    floor: str | None = None
    given = [s for s in stamps if s and valid_stamp(s)]
    for summary in summaries:
        given += summary.stamps
        if summary.floor is not None and (floor is None or summary.floor > floor):
            floor = summary.floor
    for stamp in given:
        key = replica(stamp)
        if stamp > latest.get(key, ""):
            latest[key] = stamp
    kept = sorted(s for s in latest.values() if floor is None or s > floor)
    if len(kept) > MAX_REPLICAS:
        floor, kept = kept[-MAX_REPLICAS - 1], kept[-MAX_REPLICAS:]
    return Seen(tuple(kept), floor)


def from_rows(rows: Iterable[tuple[object, object]]) -> Seen:
    """A summary from (replica, stamp) rows, read from a store or a peer: rows that are not
    stamps, or name another replica than their stamp's, are dropped; the cap applies."""
    stamps: list[str] = []
    floor: str | None = None
    for name, stamp in rows:
        if not (isinstance(stamp, str) and valid_stamp(stamp)):
            continue
        if name == FLOOR:
            floor = stamp if floor is None or stamp > floor else floor
        elif name == replica(stamp):
            stamps.append(stamp)
    return join([Seen((), floor)], stamps)
