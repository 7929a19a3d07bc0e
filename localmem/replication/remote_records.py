"""What push and pull both keep per remote in the local file: writes keyed by the remote, and
the edges recorded as on both sides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..storage.database import transaction

if TYPE_CHECKING:
    from ..store import MemoryStore


class RemoteRecords:
    """The base of push's id map and pull's state: one remote's rows in the local file."""

    def __init__(self, store: MemoryStore, remote: str) -> None:
        self.store = store
        self.remote = remote

    def _write(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        """Run the named statements in one transaction, each with this remote bound."""
        store = self.store
        with store.lock, transaction(store.conn):
            for name, params in statements:
                store.conn.execute(store.sql[name], {"remote": self.remote, **params})

    def record_edges(self, edges: list[dict[str, Any]]) -> None:
        """These edges are now on both sides."""
        if edges:
            self._write([("push_edge_record", {k: e[k] for k in ("src_id", "type", "dst_id", "strength",
                                                                  "properties")}) for e in edges])
