"""The local side of ``localmem pull``: push's id map of the remote, and what pull last took.

Reads run in one snapshot, writes in one transaction each, under the store's
lock, as in ``push_map``. A batch of pulled memories is written to the store
first and recorded here second: a pull stopped between the two finds, on its
next run, the memories under the ids it gives them (derived from the remote
id, see ``local_id_for``), so it records them instead of storing them twice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..storage.database import read_transaction
from ..storage.migrations import pulled_local_id
from ..storage.records import rows_as_dicts
from ..timeparse import format_timestamp
from .remote_records import RemoteRecords

if TYPE_CHECKING:
    from ..store import MemoryStore

# In ``pull_seen``: a memory noted before a pull writes it (with the hashes of the version written),
# until the pull records it; a push leaves such memories alone, the next pull resumes them.
PENDING = "pending"
# Where a memory the server has came from (remote_origins): only a pulled one is deleted here
# when the server drops it.
PULLED, PUSHED = "pulled", "pushed"


def local_id_for(remote: str, remote_id: str) -> str:
    """A pulled memory's local id: uuid5 of the remote URL and the remote id, so a rerun after a
    kill gives a memory the id it already has."""
    return pulled_local_id(remote, remote_id)


class PullState(RemoteRecords):
    """What the local file knows of one remote: the id map (push's) and the fields last taken."""

    def _read(self, name: str, **params: Any) -> list[dict[str, Any]]:
        store = self.store
        with store.lock, read_transaction(store.conn):
            return list(rows_as_dicts(store.conn.execute(store.sql[name], {"remote": self.remote, **params})))

    # -- reads ----------------------------------------------------------------

    def id_map(self) -> dict[str, dict[str, Any]]:
        """remote id -> {local_id, pushed_seq, fields, change_seq, present, origin}."""
        return {row["remote_id"]: row for row in self._read("pull_map")}

    def map_entry(self, remote_id: str) -> dict[str, Any] | None:
        """One row of ``id_map`` (None: not in the map)."""
        rows = self._read("pull_map_entry", remote_id=remote_id)
        return rows[0] if rows else None

    def pushes_unrecorded(self) -> set[str]:
        """Local ids a push sent and has not recorded (it was stopped): the next push looks for them."""
        return {row["local_id"] for row in self._read("push_pending")}

    def seen(self) -> dict[str, dict[str, str]]:
        out = {}
        for row in self._read("pull_seen_all"):
            try:
                out[row["remote_id"]] = json.loads(row["fields"])
            except ValueError:
                out[row["remote_id"]] = {}
        return out

    def local_rows(self, local_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not local_ids:
            return {}
        rows = self._read("pull_local_rows", ids=json.dumps(local_ids))
        return {row["id"]: row for row in rows}

    def existing(self, local_ids: list[str]) -> set[str]:
        if not local_ids:
            return set()
        return {row["id"] for row in self._read("memory_ids_existing", ids=json.dumps(local_ids))}

    def deleted_here(self, local_ids: list[str]) -> set[str]:
        """Which of ``local_ids`` were deleted in this file (a delete leaves a tombstone)."""
        if not local_ids:
            return set()
        return {row["id"] for row in self._read("pull_deleted_here", ids=json.dumps(local_ids))}

    def known_edges(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {(row["src_id"], row["type"], row["dst_id"]): row for row in self._read("pull_edges_known")}

    def local_edge(self, src_id: str, kind: str, dst_id: str) -> dict[str, Any] | None:
        rows = self._read("pull_local_edge", src_id=src_id, type=kind, dst_id=dst_id)
        return rows[0] if rows else None

    # -- writes ---------------------------------------------------------------

    def register(self, *, complete: bool, count: int) -> None:
        now = self._now()
        self._write([("push_remote_upsert_pull", {"now": now}),
                     ("pull_remote_upsert", {"now": now, "complete": now if complete else None,
                                             "count": count})])

    def record(self, entries: list[dict[str, Any]]) -> None:
        """Per memory: the push map's row (local id, remote id, version, hashes) and the
        hashes of the remote fields taken, in one transaction; an entry marked ``created`` (this
        pull stored it) is recorded as pulled from the server (``remote_origins``)."""
        statements: list[tuple[str, dict[str, Any]]] = []
        for entry in entries:
            statements.append(("push_record", {
                "local_id": entry["local_id"], "remote_id": entry["remote_id"],
                "pushed_seq": entry["pushed_seq"], "fields": json.dumps(entry["push_fields"], sort_keys=True)}))
            if entry.get("created"):
                statements.append(("remote_origin_record", {"local_id": entry["local_id"],
                                                            "remote_id": entry["remote_id"], "origin": PULLED}))
            statements.append(("pull_seen_record", {"remote_id": entry["remote_id"],
                                                    "fields": json.dumps(entry["pulled"], sort_keys=True)}))
        if statements:
            self._write(statements)

    def record_pulled(self, pairs: list[tuple[str, str]]) -> None:
        """(local id, remote id): memories this file holds as pulled from the server (``remote_origins``)."""
        if pairs:
            self._write([("remote_origin_record", {"local_id": local_id, "remote_id": remote_id, "origin": PULLED})
                         for local_id, remote_id in pairs])

    def record_seen(self, seen: list[tuple[str, dict[str, str]]]) -> None:
        """(remote id, hashes) of memories already in step, to compare the next pull with."""
        if seen:
            self._write([("pull_seen_record", {"remote_id": rid, "fields": json.dumps(hashes, sort_keys=True)})
                         for rid, hashes in seen])

    def forget(self, pairs: list[tuple[str, str]]) -> None:
        """(local id, remote id): no longer on both sides."""
        statements: list[tuple[str, dict[str, Any]]] = []
        for local_id, remote_id in pairs:
            statements += [("push_forget", {"local_id": local_id}),
                           ("push_forget_edges", {"local_id": local_id}),
                           ("pull_seen_forget", {"remote_id": remote_id})]
        if statements:
            self._write(statements)

    def forget_edges(self, keys: list[tuple[str, str, str]]) -> None:
        if keys:
            self._write([("push_edge_forget", {"src_id": s, "type": t, "dst_id": d}) for s, t, d in keys])

    def _now(self) -> str:
        return format_timestamp(self.store.now())
