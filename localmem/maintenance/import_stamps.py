"""The sync stamp an export carries for each memory, and when an import takes it.

An export's memory line may carry (optional; files without it import as before)::

    "sync": {"stamp": "001796457350403-0000000000-dc54…", "digest": "3f1c…",
             "seen": [["dc54…", "001796457340000-0000000002-dc54…"], ...]}

``stamp`` is the hybrid logical clock stamp of the version the line holds (it names the store
that made it: ``replication/hlc.py``), ``digest`` that version's digest (``sync_rules.digest``)
and ``seen`` what the exporting store had seen of the memory (``replication/seen.py``, at most
17 rows). An import that writes that very version records it as the same version, as a sync
copying it would (the stamp pinned, the summary joined, the clock moved past the stamp), so an
edit and a delete made after it on the importing store order after it and cover it at the next
sync. Otherwise the import writes a version of its own, as an import without stamps does; each
line's outcome is counted by reason in ``StampCounts``. A version is taken only when:

* the line is the version stamped (its id given, its digest that of what the import writes);
* no stamp of it (its own, or one of its summary) is more than the sync's bounded skew ahead
  of this machine's clock (a skewed or hand-made clock must not order anything here);
* it was not made by this store (its own earlier version, met again in its own export);
* the import creates the memory and this store holds no deletion of it (one it deleted, or took
  in: brought back by an import, the memory is a new version made now, as a restore is), or it
  updates a version the exporting store had seen, to a version stamped after it.

A malformed field is refused by name (the line, and so an all-or-nothing import, is refused).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..replication.hlc import EARLIEST, MAX_SKEW_MS, stamp_key, valid_stamp
from ..replication.seen import FLOOR, MAX_REPLICAS, Seen, from_rows, replica
from ..replication.sync_rules import digest
from ..storage.hybrid_clock import wall_ms
from ..storage.records import MemoryRow

if TYPE_CHECKING:
    from ..store import MemoryStore

FIELD = "sync"
_DIGEST = re.compile(r"[0-9a-f]{24}")
AHEAD = "a stamp more than 24 hours ahead of this machine's clock"
OWN = "a version made by this store"
CHANGED = "the line is not the version its stamp names"
DELETED_HERE = "deleted here before: the import is a new version, as a restore is"
NOT_SEEN = "this store holds a version the exporting store had not seen"
NOT_LATER = "the stamp is not later than the version held here"


@dataclass(frozen=True)
class FileStamp:
    """A memory line's ``sync`` field, checked."""

    stamp: str
    digest: str
    seen: Seen


@dataclass
class StampCounts:
    """How many memory lines an import wrote as the exported version (``taken``), and why the
    others that carried a stamp were written as versions of this store (reason -> count)."""

    taken: int = 0
    not_taken: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"taken": self.taken, "not_taken": dict(sorted(self.not_taken.items()))}


def sync_field(stamp: str | None, version: dict[str, Any], seen_rows: str | None) -> dict[str, Any] | None:
    """The ``sync`` field of an exported memory line (None: the memory has no stamp to give)."""
    if not valid_stamp(stamp):
        return None
    try:
        rows = json.loads(seen_rows) if seen_rows else []
    except ValueError:
        rows = []
    seen = from_rows(tuple(row) for row in rows if isinstance(row, list) and len(row) == 2)
    return {"stamp": stamp, "digest": digest(version), "seen": [list(row) for row in seen.rows()]}


def read_sync_field(value: Any) -> FileStamp | None:
    """A line's ``sync`` field; ``ValidationError`` naming the part that is malformed."""
    if value is None:
        return None
    if not isinstance(value, dict) or not {"stamp", "digest"} <= set(value) <= {"stamp", "digest", "seen"}:
        raise ValidationError(f"'{FIELD}' must be null or an object with 'stamp', 'digest' and optional 'seen'")
    if not valid_stamp(value["stamp"]):
        raise ValidationError(f"'{FIELD}.stamp' must be a clock stamp (15 digits, '-', 10 digits, '-', "
                              "32 hexadecimal characters)")
    if not isinstance(value["digest"], str) or not _DIGEST.fullmatch(value["digest"]):
        raise ValidationError(f"'{FIELD}.digest' must be 24 hexadecimal characters")
    rows = value.get("seen") or []
    if not isinstance(rows, list) or len(rows) > MAX_REPLICAS + 1:
        raise ValidationError(f"'{FIELD}.seen' must be a list of at most {MAX_REPLICAS + 1} [replica, stamp] pairs")
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and valid_stamp(row[1])
                and row[0] in (FLOOR, replica(row[1]))):
            raise ValidationError(f"'{FIELD}.seen' holds {str(row)[:80]}: each must be [replica, stamp], the "
                                  f"replica the stamp's own or '{FLOOR}'")
    return FileStamp(value["stamp"], value["digest"], from_rows(tuple(row) for row in rows))


def held_versions(store: MemoryStore, ids: list[str]) -> dict[str, tuple[str | None, bool]]:
    """Per id: the stamp of the version held here (None: none held) and whether this store holds a
    deletion of it (inside the caller's transaction, before the import writes)."""
    rows = store.conn.execute(store.sql["import_sync_states"], {"ids": json.dumps(ids)})
    return {memory_id: (hlc, bool(deleted)) for memory_id, hlc, deleted in rows}


def why_not(file_stamp: FileStamp, written: MemoryRow, held: tuple[str | None, bool], *, updates: bool,
            store_id: str, horizon_ms: int, named: bool = True) -> str | None:
    """Why an import writing ``written`` (over a version held here when ``updates``; ``held``: its
    stamp, and whether this store holds a deletion of the memory; ``named``: the line gives the
    memory's id) does not take ``file_stamp`` (None: it takes it)."""
    stamps = [file_stamp.stamp, *(stamp for _, stamp in file_stamp.seen.rows())]
    if any(stamp_key(stamp, horizon_ms) == EARLIEST for stamp in stamps):
        return AHEAD
    if replica(file_stamp.stamp) == store_id:
        return OWN
    if not named or digest(vars(written)) != file_stamp.digest:  # the fields a sync carries, as stored
        return CHANGED  # another version, or a new memory (a line without its id) of the same fields
    held_stamp, deleted = held
    if not updates:
        return DELETED_HERE if deleted else None
    exporter_saw = Seen(file_stamp.seen.stamps + (file_stamp.stamp,), file_stamp.seen.floor)
    key, held_key = stamp_key(file_stamp.stamp, None), stamp_key(held_stamp, None)
    if held_key is None or not exporter_saw.covers(held_stamp):  # unstamped here: nobody had seen it
        return NOT_SEEN
    return NOT_LATER if key is None or key <= held_key else None


def take_stamps(store: MemoryStore, taken: list[tuple[str, FileStamp]]) -> None:
    """Record each (id, stamp) as the version this store now holds, as a sync copying it does:
    its stamp pinned, the exporting store's summary joined into what this store has seen of it,
    and this store's clock moved past the latest stamp (inside the caller's transaction)."""
    if not taken:
        return
    sql = store.sql
    store.conn.execute(sql["sync_memory_pin_hlc"], {"stamps": json.dumps([[i, s.stamp] for i, s in taken])})
    rows = [[i, name, stamp] for i, s in taken for name, stamp in s.seen.rows()]
    if rows:
        store.conn.execute(sql["sync_seen_join"], {"rows": json.dumps(rows)})
    wall, counter, _ = max(key for key in (stamp_key(s.stamp, None) for _, s in taken) if key is not None)
    store.conn.execute(sql["sync_hlc_receive"], {"wall": wall, "counter": counter, "skew_ms": MAX_SKEW_MS})


def horizon(store: MemoryStore) -> int:
    """This machine's clock plus the bounded skew: a stamp past it is not taken."""
    return wall_ms(store.now()) + MAX_SKEW_MS


def store_identity(store: MemoryStore) -> str:
    row = store.conn.execute(store.sql["sync_store_id"]).fetchone()
    return str(row[0]) if row else ""
