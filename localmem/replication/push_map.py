"""The local side of ``localmem push``: what to send, and the id map per remote.

Every statement runs under the store's lock and in one transaction (writes)
or one snapshot (reads), so a push in one process and writes in another
never see each other half done. The map is written after the server has
answered, and a create is marked *pending* before it is sent: a push that
stops at any point finds, on the next run, exactly the creates whose answer
it did not record (see ``push.Pusher.reconcile``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..storage.database import read_transaction
from ..storage.records import rows_as_dicts
from ..tags import compute_tag_prefixes
from ..timeparse import format_timestamp
from .pull_state import PUSHED
from .remote_records import RemoteRecords

if TYPE_CHECKING:
    from ..store import MemoryStore

PAGE = 500


def fingerprint(value: Any) -> str:
    """A short stable hash of a JSON value (what the server was sent for one field)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def scope_filters(tags: list[str] | None) -> list[str]:
    """``--tags`` values as the prefix rows they match (``a/b`` is ``a:b``, case-insensitive)."""
    found: list[str] = []
    for tag in tags or ():
        prefixes = compute_tag_prefixes([tag])
        if prefixes and prefixes[-1] not in found:
            found.append(prefixes[-1])
    return found


class PushMap(RemoteRecords):
    """The id map of one remote in the local file, and the queries a push runs."""

    def __init__(self, store: MemoryStore, remote: str, tags: list[str] | None = None) -> None:
        super().__init__(store, remote)
        self.tags = scope_filters(tags)
        self._scope = store.sql.fragment("push_scope") if self.tags else ""

    def _params(self, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"remote": self.remote, **extra}
        if self.tags:
            params["tags"] = json.dumps(self.tags)
        return params

    def _read(self, name: str, **params: Any) -> list[dict[str, Any]]:
        store = self.store
        with store.lock, read_transaction(store.conn):
            sql = store.sql.compose(name, scope=self._scope)
            return list(rows_as_dicts(store.conn.execute(sql, self._params(**params))))

    # -- reads ----------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return self._read("push_counts")[0]

    def pages(self, name: str) -> Iterator[list[dict[str, Any]]]:
        """``push_to_create`` / ``push_to_update`` rows, a page at a time (keyset on pk)."""
        after = 0
        while True:
            rows = self._read(name, after=after, limit=PAGE)
            if not rows:
                return
            yield rows
            after = rows[-1]["pk"]

    def pending(self) -> list[dict[str, Any]]:
        return self._read("push_pending")

    def deleted(self) -> list[dict[str, Any]]:
        return self._read("push_deleted")

    def pulled_unrecorded(self) -> list[str]:
        """Remote ids of memories a pull began to write and did not record (it was stopped)."""
        return [row["remote_id"] for row in self._read("push_pulled_unrecorded")]

    def remote_ids(self, local_ids: list[str]) -> dict[str, str]:
        if not local_ids:
            return {}
        rows = self._read("push_remote_ids", ids=json.dumps(sorted(set(local_ids))))
        return {row["local_id"]: row["remote_id"] for row in rows}

    def created_again(self, local_ids: list[str]) -> dict[str, str]:
        """Of these local memories (the server lacks them), those it had before: local id -> its old server id."""
        if not local_ids:
            return {}
        rows = self._read("push_created_again", ids=json.dumps(sorted(set(local_ids))))
        return {row["local_id"]: row["remote_id"] for row in rows}

    def is_mapped(self, remote_id: str, *, besides: str | None = None) -> bool:
        """Whether some local memory (other than ``besides``) is mapped to the server's ``remote_id``."""
        return bool(self._read("push_remote_mapped", remote_id=remote_id, besides=besides))

    def edges_to_send(self) -> list[dict[str, Any]]:
        return self._read("push_edges_to_send")

    def edges_unsent(self) -> int:
        return self._read("push_edges_unsent")[0]["count(*)"]

    def edges_planned(self) -> dict[str, int]:
        row = self._read("push_edges_planned")[0]
        return {key: int(value or 0) for key, value in row.items()}

    def edges_deleted(self) -> list[dict[str, Any]]:
        return self._read("push_edges_deleted")

    def sample(self, limit: int) -> list[dict[str, Any]]:
        return self._read("push_sample", limit=limit)

    def scoped_count(self) -> int:
        return self._read("memory_count_scoped")[0]["count(*)"]

    def memory_edges(self, local_id: str) -> list[dict[str, Any]]:
        return self._read("push_memory_edges", id=local_id)

    # -- writes ---------------------------------------------------------------

    def register(self, kind: str) -> None:
        self._write([("push_remote_upsert", {"kind": kind, "now": self._now()})])

    def mark_pending(self, local_ids: list[str]) -> None:
        if local_ids:
            self._write([("push_mark_pending", {"ids": json.dumps(local_ids), "now": self._now()})])

    def record(self, entries: list[tuple[str, str, int, dict[str, str]]]) -> None:
        """(local id, remote id, change counter sent, field hashes) for each memory the server has;
        one not known there before is recorded as pushed (``remote_origins``), one known keeps its
        origin under this id (a pulled memory the server lost, created there again, stays pulled)."""
        statements: list[tuple[str, dict[str, Any]]] = []
        for local, remote_id, seq, fields in entries:
            statements += [("push_record", {"local_id": local, "remote_id": remote_id, "pushed_seq": seq,
                                            "fields": json.dumps(fields, sort_keys=True)}),
                           ("remote_origin_record", {"local_id": local, "remote_id": remote_id, "origin": PUSHED})]
        if statements:
            self._write(statements)

    def changed_there(self, remote_ids: list[str]) -> None:
        """The server's version of these memories is what this push sent: what pulls last took of
        them is no reference any more (the next pull compares them field by field)."""
        if remote_ids:
            self._write([("pull_seen_forget", {"remote_id": remote_id}) for remote_id in remote_ids])

    def forget(self, local_ids: list[str], *, with_edges: bool = False) -> None:
        statements: list[tuple[str, dict[str, Any]]] = []
        for local in local_ids:
            statements.append(("push_forget_pulled", {"local_id": local}))
            statements.append(("push_forget", {"local_id": local}))
            if with_edges:
                statements.append(("push_forget_edges", {"local_id": local}))
        if statements:
            self._write(statements)

    def forget_edges(self, edges: list[dict[str, Any]]) -> None:
        if edges:
            self._write([("push_edge_forget", {k: e[k] for k in ("src_id", "type", "dst_id")})
                         for e in edges])

    def _now(self) -> str:
        return format_timestamp(self.store.now())
