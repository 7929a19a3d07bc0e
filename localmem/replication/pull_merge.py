"""How ``localmem pull`` compares a server's memory with the local one, and merges the two.

* Comparing: what AutoMem fills in itself (entity tags, enrichment metadata, a
  confidence the local memory left unset, a timestamp written another way) is no
  difference.
* Compare-and-set: a pull writes a memory (or moves it to the trash) only if it
  is still the version the pull read, checked inside the write transaction by its
  change number; otherwise ``ChangedMeanwhile``, nothing is written, and the pull
  reads it again and decides again (``MERGE_ATTEMPTS`` rounds at most).
* Same-field conflicts: a field changed both on the server and here since they
  were last in step. The server's version stays current and the local one is
  kept as a conflict copy, made as sync makes them (``conflict_copy``), which
  the next push sends there too. Not the later by the clock, as in sync: AutoMem's
  ``PATCH`` keeps a memory's ``updated_at``, so its listing cannot say when a
  field changed there, and a rule by time would let every local edit win. The
  server is the copy every machine pulls from, so each one that pulls the same
  conflict makes the same choice.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from ..classify import normalize_memory_type
from ..errors import LocalMemError, ValidationError
from ..storage import edges as edge_store
from ..timeparse import parse_timestamp
from .conflict_copy import conflict_copy_record
from .pull_wire import FIELDS
from .push_wire import ServerProfile, field_hashes, memory_payload
from .sync_rules import CONFLICT_RELATION, SYNCED_FIELDS

if TYPE_CHECKING:
    from ..store import MemoryStore

AUTOMEM = ServerProfile("automem", None, None)
MERGE_ATTEMPTS = 3  # rounds one memory goes through the merge while a writer keeps changing it
CHANGED_MEANWHILE = "changed here during the pull (compare-and-set)"
KEPT_BECAUSE = ("changed in the same field both here and on the server since the last pull; "
                "the server's version is current")


class ChangedMeanwhile(LocalMemError):
    """The local memory is no longer the version the pull decided on; nothing was written."""


# -- comparing ------------------------------------------------------------------

def same_instant(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    try:
        return parse_timestamp(a) == parse_timestamp(b)
    except (LocalMemError, ValueError):
        return a == b


def close_enough(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), abs_tol=1e-6)


def local_type(value: str | None) -> str | None:
    """The store's name for a remote type; None (the store classifies the memory) for a type
    it does not know (AutoMem keeps any type as given)."""
    if value is None:
        return None
    try:
        return normalize_memory_type(value)
    except ValidationError:
        return None


def own_tags(tags: list[str], server_prefix: str) -> list[str]:
    return sorted({t.lower() for t in tags if not t.lower().startswith(server_prefix)})


# -- compare-and-set --------------------------------------------------------------

def expect_version(store: MemoryStore, local_id: str, change_seq: int | None) -> None:
    """Inside the write transaction: the memory is still at ``change_seq``, or ``ChangedMeanwhile``."""
    row = store.conn.execute(store.sql["pull_change_seq"], {"id": local_id}).fetchone()
    if (row[0] if row else None) != change_seq:
        raise ChangedMeanwhile(CHANGED_MEANWHILE)


# -- same-field conflicts -----------------------------------------------------------

def changed_here(row: dict[str, Any], entry: dict[str, Any], remote_ids: dict[str, str]) -> set[str]:
    """The fields of ``row`` (a local memory) changed here since the server had this memory in
    the version ``entry`` (push's id map) records; every field when it records none."""
    if not (row["change_seq"] or 0) > entry["pushed_seq"]:
        return set()
    try:
        old = json.loads(entry["fields"] or "{}")
    except ValueError:
        old = {}
    payload, complete = memory_payload(row, AUTOMEM, remote_ids, with_embedding=False)
    now = field_hashes(payload, AUTOMEM, complete=complete)
    return {name for name in FIELDS if not old.get(name) or old.get(name) != now.get(name)}


def store_conflict_copy(store: MemoryStore, memory_id: str, losing: dict[str, Any], winner_at: str) -> str:
    """Keep ``losing`` (a record of ``memory_id``) as a conflict copy the memory supersedes, with
    the ``INVALIDATED_BY`` edge sync gives one; inside the caller's transaction. The copy's id."""
    record = conflict_copy_record(memory_id, losing, winner_at, KEPT_BECAUSE)
    copy_id = record["id"]
    if store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (copy_id,)).fetchone():
        return copy_id  # this conflict was met before (a pull run again): its copy is there
    fields = {name: record[name] for name in SYNCED_FIELDS
              if name != "content" and record.get(name) is not None}
    store.store(record["content"], id=copy_id, **fields)
    src, dst = edge_store.edge_ends(store.conn, copy_id, memory_id)
    edge_store.upsert_edge(store.conn, store.sql, src, dst, CONFLICT_RELATION, 0.9, winner_at,
                           {"reason": "pull conflict"})
    return copy_id
