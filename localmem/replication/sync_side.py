"""One side of a sync: a store read and written through the library (never by copying its file).

``StoreSide`` wraps an open ``MemoryStore`` (the local one, or a peer file opened on
its own connection, whose other writers may be running). Reads page through the
change counter; writes go through ``MemoryStore`` so every derived index (full text,
tags, vectors, token codes, threads) is kept, then pin the times the other store
gave (an ``updated_at``, a deletion's time), so both stores hold the same version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..storage import edges as edge_store
from ..storage.database import read_transaction, transaction
from ..storage.records import rows_as_dicts, to_record
from ..storage.hybrid_clock import wall_ms
from ..timeparse import format_timestamp
from ..trash import move_to_trash, purge
from .conflict_copy import is_conflict_copy, is_conflict_link, relink_conflict_copies
from .hlc import MAX_SKEW_MS, stamp_key, valid_stamp
from .seen import Seen, from_rows
from .sync_rules import ABSENT, SYNCED_FIELDS, EdgeState, MemoryState
from .sync_wire import STORE_ID

if TYPE_CHECKING:
    from ..store import MemoryStore

CHANGED_MEANWHILE = "changed here during the sync (compare-and-set): merged again"
MISSING_END = "a memory it joins is not here"


class ChangedMeanwhile(LocalMemError):
    """A sync's write found another version than the one it decided on; nothing was written."""


MAX_MEMORY_EDGES = 500  # edges read at once for memories a merge brings back (one answer's worth)
PAGE = 500  # changes read per page: a page's records are what a sync holds in memory
MAX_PAGES = 1_000_000  # pages read of one kind in one sync (500 million changes)
MAX_EMPTY_PAGES = 100  # a peer's empty pages in a row before the sync stops (a store sends none)
PAGE_STATEMENTS = {"memories": "sync_memory_changes", "deletions": "sync_tombstone_changes",
                   "edges": "sync_edge_changes"}


class StoreSide:
    """A store as a sync sees it."""

    def __init__(self, store: MemoryStore, label: str) -> None:
        self.store = store
        self.label = label
        row = store.conn.execute(store.sql["sync_store_id"]).fetchone()
        if row is None:
            raise LocalMemError(f"{label} has no store identity (schema too old?)")
        if not isinstance(row[0], str) or not STORE_ID.fullmatch(row[0]):
            raise LocalMemError(f"{label} has a malformed store identity ({str(row[0])[:40]!r}...: not 32 "
                                "hexadecimal characters); refused")
        self.store_id: str = row[0]

    # -- reading ---------------------------------------------------------------

    def _rows(self, name: str, **bindings: Any) -> list[dict[str, Any]]:
        with self.store.lock, read_transaction(self.store.conn):
            return list(rows_as_dicts(self.store.conn.execute(self.store.sql[name], bindings)))

    def wall_ms(self) -> int:
        """This store's machine clock (the one its stamps are made with), in ms."""
        return wall_ms(self.store.now())

    def clock(self) -> int:
        with self.store.lock:
            return int(self.store.conn.execute(self.store.sql["sync_clock_now"]).fetchone()[0])

    def memory_count(self) -> int:
        with self.store.lock:
            return int(self.store.conn.execute(self.store.sql["memory_count"]).fetchone()[0])

    def pair_token(self, peer_id: str) -> str | None:
        """The token this store and ``peer_id`` drew at the end of their last sync (None: none yet)."""
        with self.store.lock:
            row = self.store.conn.execute(self.store.sql["sync_pair_token_get"], {"peer": peer_id}).fetchone()
        return row[0] if row and isinstance(row[0], str) and STORE_ID.fullmatch(row[0]) else None

    def sent_to(self, peer_id: str) -> int:
        with self.store.lock:
            row = self.store.conn.execute(self.store.sql["sync_peer_sent"], {"peer": peer_id}).fetchone()
        return int(row[0]) if row else 0

    def page(self, kind: str, after: int, until: int, peer: str, limit: int | None = None
             ) -> tuple[list[Any], int | None]:
        """One page of changes in (after, until] to send to ``peer``: ``memories``, ``deletions``
        or ``edges``; the states and the last change number read (None: nothing more). What a
        sync wrote here from ``peer`` and nothing changed since is not sent back."""
        statement = PAGE_STATEMENTS.get(kind)
        if statement is None:
            raise ValidationError(f"'kind' must be one of {', '.join(PAGE_STATEMENTS)}")
        rows = self._rows(statement, since=after, until=until, peer=peer, limit=min(limit or PAGE, PAGE))
        if not rows:
            return [], None
        if kind == "memories":
            items: list[Any] = [_memory_state(row) for row in rows]
        elif kind == "deletions":
            items = [_tombstone(row) for row in rows]
        else:
            items = [_edge(row) for row in rows]
        return items, rows[-1]["change_seq"]

    def memory_states(self, ids: list[str]) -> dict[str, MemoryState]:
        """Each id's state here: its record, its tombstone, or neither."""
        found: dict[str, MemoryState] = {}
        for row in self._rows("sync_memories_by_ids", ids=json.dumps(ids)):
            found[row["id"]] = _memory_state(row)
        for row in self._rows("sync_tombstones_by_ids", ids=json.dumps(ids)):
            found.setdefault(row["id"], _tombstone(row))
        return found

    def edge_states(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], EdgeState]:
        rows = self._rows("sync_edge_states", keys=json.dumps([list(k) for k in keys]))
        return {(row["src_id"], row["type"], row["dst_id"]): _edge(row) for row in rows}

    def memory_edges(self, ids: list[str]) -> list[EdgeState]:
        """The edges these memories have here now (at most ``MAX_MEMORY_EDGES``)."""
        rows = self._rows("sync_memory_edges", ids=json.dumps(ids), limit=MAX_MEMORY_EDGES)
        return [_edge(row) for row in rows]

    def bases(self, peer_id: str, ids: list[str]) -> dict[str, str]:
        with self.store.lock:
            return dict(self.store.conn.execute(self.store.sql["sync_base_get"],
                                                {"peer": peer_id, "ids": json.dumps(ids)}).fetchall())

    # -- writing ---------------------------------------------------------------

    def _version_now(self, memory_id: str) -> str:
        """The version this side holds now (``ABSENT`` for neither a record nor a tombstone)."""
        store = self.store
        ids = json.dumps([memory_id])
        rows = list(rows_as_dicts(store.conn.execute(store.sql["memories_by_ids"], {"ids": ids})))
        if rows:
            state = _memory_state(rows[0])
        else:
            tombs = list(rows_as_dicts(store.conn.execute(store.sql["sync_tombstones_by_ids"], {"ids": ids})))
            state = _tombstone(tombs[0]) if tombs else MemoryState(memory_id)
        return state.version.text() if state.version is not None else ABSENT

    def put_memory(self, state: MemoryState, reason: str = "sync", expect: str | None = None) -> None:
        """Make this side hold ``state`` (a record, with its own updated_at, or a deletion: into the
        trash, or for good when the other store purged it). With ``expect`` (the version the sync
        read here), only if this side still holds that version, checked inside the write
        transaction: otherwise ``ChangedMeanwhile``, and nothing is written."""
        store = self.store
        with store.lock, transaction(store.conn):
            if expect is not None and self._version_now(state.id) != expect:
                raise ChangedMeanwhile(CHANGED_MEANWHILE)
            self._put(state, reason)

    def _put(self, state: MemoryState, reason: str) -> None:
        store = self.store
        if state.record is None:
            memory_id = state.id
            with store.lock, transaction(store.conn):
                if state.purged:
                    purge(store, memory_id)
                else:
                    move_to_trash(store, memory_id, reason)
                store.conn.execute(store.sql["sync_tombstone_time"], {
                    "id": memory_id, "deleted_at": state.deleted_at, "deleted_updated_at": state.deleted_updated_at,
                    "hlc": state.hlc, "deleted_hlc": state.deleted_hlc})
                if state.purged:
                    store.conn.execute(store.sql["sync_tombstone_purged"], {"id": memory_id})
                self._receive([state.hlc])
            return
        record = state.record
        fields = {name: record[name] for name in SYNCED_FIELDS if name in record}
        with store.lock, transaction(store.conn):
            exists = store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (record["id"],)).fetchone()
            if exists:
                store.update(record["id"], **_update_fields(fields))
            else:
                store.store(fields.pop("content"), id=record["id"], **_store_fields(fields))
            self._pin_memories([state])

    def put_memories(self, states: list[MemoryState], peer: str,
                     expect: dict[str, str] | None = None) -> list[tuple[str, str]]:
        """``put_memory`` for each (states from ``peer``, each only if this side still holds the
        version in ``expect``, when one is given); new records go in one batch. Returns (id, why)
        of those not written (why is ``CHANGED_MEANWHILE`` for a failed compare-and-set)."""
        expect = expect or {}
        refused: list[tuple[str, str]] = []
        new: list[dict[str, Any]] = []
        store = self.store
        with store.lock:
            present = {row[0] for row in store.conn.execute(
                "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([s.record["id"] for s in states if s.record is not None]),))}
            for state in states:
                if state.record is not None and state.record["id"] not in present \
                        and expect.get(state.id, ABSENT) == ABSENT:
                    fields = {name: state.record[name] for name in SYNCED_FIELDS if name in state.record}
                    new.append({**_store_fields(fields), "content": fields.get("content"),
                                "id": state.record["id"]})
            new_ids = [item["id"] for item in new]
            if new:
                # The batch commits on its own (it embeds outside the write lock): its stamps are
                # noted first, so a process killed before they are pinned leaves them for the next
                # sync (settle_pins) rather than the fresh stamps the batch got here.
                batch = self._note_pins([s for s in states if s.id in set(new_ids)], peer)
                try:
                    store.store_many(new)
                except ValidationError:  # one bad record: store the rest one by one, naming it
                    for item in new:
                        try:
                            store.store_many([item])
                        except ValidationError as exc:
                            refused.append((str(item.get("id")), exc.message))
                stored = set(new_ids) - {memory_id for memory_id, _ in refused}
                with transaction(store.conn):
                    self._pin_memories([s for s in states if s.id in stored])
                    store.conn.execute(store.sql["sync_pins_clear"], {"batch": batch})
            # The new records (a conflict copy among them) go first: a process killed before the others
            # keeps the losing version of a conflict where it was, which the next sync meets again; killed
            # after a winner went over it and before its copy was written, it kept neither.
            for state in states:
                if state.id not in set(new_ids):
                    try:
                        self.put_memory(state, f"sync with store {peer}", expect.get(state.id))
                    except (ValidationError, NotFoundError, ChangedMeanwhile) as exc:
                        refused.append((state.id, exc.message))
            with transaction(store.conn):
                self._note_echoes(states, peer, {memory_id for memory_id, _ in refused})
        return refused

    def _note_pins(self, states: list[MemoryState], peer: str) -> int | None:
        """Note the stamps of a batch about to be written; the batch's number (None: no stamps)."""
        # The record's updated_at tells the version written from one a writer made since (every
        # edit moves it); cheaper than the version's digest, which a batch would pay per record.
        pins = [[s.id, s.hlc, s.record.get("updated_at")] for s in states
                if s.record is not None and stamp_key(s.hlc, None) is not None]
        if not pins:
            return None
        with transaction(self.store.conn):
            self.store.conn.execute(self.store.sql["sync_pins_note"], {"pins": json.dumps(pins), "peer": peer})
            return self.store.conn.last_insert_rowid()

    def settle_pins(self) -> None:
        """Pin the stamps a sync killed mid-batch noted and did not pin (``put_memories``), on
        the records still holding the version it wrote (one a writer changed since keeps its
        own, newer stamp), and note them as received from their peer. A batch (at most a page
        of records) at a time; each is cleared, so this ends."""
        store = self.store
        with store.lock:
            while rows := self._rows("sync_pins_pending"):
                batch, peer, pins = rows[0]["batch"], rows[0]["peer"], _pins(rows[0]["pins"])
                with transaction(store.conn):
                    held = dict(store.conn.execute(store.sql["sync_pins_held"],
                                                   {"ids": json.dumps([pin[0] for pin in pins])}))
                    written = [(memory_id, stamp) for memory_id, stamp, updated_at in pins
                               if isinstance(memory_id, str) and memory_id in held and held[memory_id] == updated_at]
                    self._pin_memories([MemoryState(i, record={"id": i}, hlc=_stamp(stamp)) for i, stamp in written])
                    store.conn.execute(store.sql["sync_echo_memories"],
                                       {"peer": peer, "ids": json.dumps([i for i, _ in written])})
                    store.conn.execute(store.sql["sync_pins_clear"], {"batch": batch})

    def note_owed_edges(self, keeper: str, receiver: str, ids: list[str]) -> None:
        """Note, before memories kept over their delete are written back on ``receiver``, that it
        is owed the edges ``keeper`` holds of them (``sync_owed_edges``; a sync keeps the note in
        its own store, whichever side receives)."""
        store = self.store
        with store.lock, transaction(store.conn):
            store.conn.execute(store.sql["sync_owed_edges_note"],
                               {"keeper": keeper, "receiver": receiver, "ids": json.dumps(ids)})

    def owed_edges(self, a: str, b: str) -> list[tuple[str, str, list[str]]]:
        """Edges still owed between stores ``a`` and ``b``: (keeper, receiver, memory ids), at
        most a page of ids (clearing them, as ``clear_owed_edges`` does, reads the next ones)."""
        groups: dict[tuple[str, str], list[str]] = {}
        for row in self._rows("sync_owed_edges_pending", a=a, b=b, limit=PAGE):
            groups.setdefault((row["keeper"], row["receiver"]), []).append(row["id"])
        return [(keeper, receiver, ids) for (keeper, receiver), ids in groups.items()]

    def clear_owed_edges(self, keeper: str, receiver: str, ids: list[str]) -> None:
        store = self.store
        with store.lock, transaction(store.conn):
            store.conn.execute(store.sql["sync_owed_edges_clear"],
                               {"keeper": keeper, "receiver": receiver, "ids": json.dumps(ids)})

    def relink_conflict_copies(self, ids: list[str]) -> list[tuple[str, str, str]]:
        """Link again the conflict copies held here that name one of ``ids`` (memories a sync has
        just brought back here over their delete) and whose link this store removed itself (the
        delete did), stamped now: that removal, stamped after the copy's own link, would
        otherwise win wherever the two meet (``conflict_copy.relink_conflict_copies``). The links
        written (their keys)."""
        with self.store.lock, transaction(self.store.conn):
            return relink_conflict_copies(self.store, ids, "sync_conflict_copies_unlinked_here")

    def _note_echoes(self, states: list[MemoryState], peer: str, refused: set[str]) -> None:
        # A conflict copy is made by the sync for both sides, not received from the peer: a sync
        # killed after writing it here and before writing it there must send it there next time.
        written = [s for s in states if s.id not in refused
                   and not is_conflict_copy(s)]
        store = self.store
        with transaction(store.conn):
            for kind, statement in (("m", "sync_echo_memories"), ("d", "sync_echo_deletions")):
                ids = [s.id for s in written if (s.record is not None) == (kind == "m")]
                if ids:
                    store.conn.execute(store.sql[statement], {"peer": peer, "ids": json.dumps(ids)})

    def put_edges(self, states: list[EdgeState], peer: str) -> list[tuple[tuple[str, str, str], str]]:
        """``put_edge`` for each (states from ``peer``), in one transaction, each edge a savepoint
        in it: a commit per edge cost more than the edge itself; (key, why) of those not written."""
        with self.store.lock, transaction(self.store.conn):
            return [(state.key, why) for state in states if (why := self.put_edge(state, peer))]

    def put_edge(self, state: EdgeState, peer: str) -> str | None:
        """Make this side hold ``state``; why not (a memory it joins is not here), or None."""
        store = self.store
        src_id, relation, dst_id = state.key
        with store.lock, transaction(store.conn):
            try:
                src, dst = edge_store.edge_ends(store.conn, src_id, dst_id)
            except NotFoundError as exc:
                return f"{MISSING_END} ({exc.message})"
            if state.exists:
                try:
                    properties = json.loads(state.properties or "{}")
                except ValueError:
                    return "its properties are not JSON"
                # The edge keeps the stamp it was written with on the other store.
                edge_store.upsert_edge(store.conn, store.sql, src, dst, relation, float(state.strength),
                                       state.updated_at or format_timestamp(store.now()), properties,
                                       hlc=state.hlc or None)
            else:
                edge_store.delete_edges(store.conn, store.sql, src, dst, relation)
                store.conn.execute(store.sql["sync_edge_tombstone_time"], {
                    "src_id": src_id, "type": relation, "dst_id": dst_id, "deleted_at": state.deleted_at,
                    "hlc": state.hlc})
            self._receive([state.hlc])
            if not is_conflict_link(state):  # made by the sync for both sides, not received: see _note_echoes
                store.conn.execute(store.sql["sync_echo_edge"], {
                    "peer": peer, "src_id": src_id, "type": relation, "dst_id": dst_id})
        return None

    def _pin_memories(self, states: list[MemoryState]) -> None:
        """Records just written from a peer keep the stamps they had there (so every store orders
        them alike), and this store's clock moves past them (inside the caller's transaction)."""
        stamps = [[s.id, s.hlc] for s in states if s.record is not None and stamp_key(s.hlc, None)]
        if stamps:
            self.store.conn.execute(self.store.sql["sync_memory_pin_hlc"], {"stamps": json.dumps(stamps)})
            self._receive([stamp for _, stamp in stamps])

    def _receive(self, stamps: list[str | None]) -> None:
        """The max rule: the clock moves past the latest of ``stamps`` (unless its wall time is
        more than the bounded skew ahead of this machine's: the SQL checks)."""
        keys = [key for key in (stamp_key(stamp, None) for stamp in stamps) if key is not None]
        if keys:
            wall, counter, _ = max(keys)
            self.store.conn.execute(self.store.sql["sync_hlc_receive"], {
                "wall": wall, "counter": counter, "skew_ms": MAX_SKEW_MS})

    def requeue_edges(self, keys: list[tuple[str, str, str]]) -> None:
        """Send these edges again at the next sync (the peer lacked a memory they join)."""
        store = self.store
        with store.lock, transaction(store.conn):
            for src_id, relation, dst_id in keys:
                store.conn.execute(store.sql["sync_edge_requeue"], {"src_id": src_id, "type": relation,
                                                                    "dst_id": dst_id})

    def record_seen(self, seen: dict[str, Seen], expect: dict[str, str] | None = None) -> None:
        """Join what a sync merged of these memories into what this store has seen of them; with
        ``expect``, only for those still at the version given there (checked in the transaction)."""
        store = self.store
        with store.lock, transaction(store.conn):
            rows = [[memory_id, name, stamp] for memory_id, summary in seen.items()
                    if expect is None or self._version_now(memory_id) == expect.get(memory_id)
                    for name, stamp in summary.rows()]
            if rows:
                store.conn.execute(store.sql["sync_seen_join"], {"rows": json.dumps(rows)})

    def record_bases(self, peer_id: str, versions: dict[str, str]) -> None:
        store = self.store
        with store.lock, transaction(store.conn):
            for memory_id, version in versions.items():
                store.conn.execute(store.sql["sync_base_set"],
                                   {"peer": peer_id, "id": memory_id, "version": version})

    def record_sent(self, peer_id: str, sent_seq: int, token: str | None = None) -> None:
        store = self.store
        with store.lock, transaction(store.conn):
            store.conn.execute(store.sql["sync_peer_record"], {
                "peer": peer_id, "sent_seq": sent_seq, "now": format_timestamp(store.now())})
            if token is not None:
                store.conn.execute(store.sql["sync_pair_token_set"], {"peer": peer_id, "token": token})
            store.conn.execute(store.sql["sync_echo_prune"], {"peer": peer_id, "sent_seq": sent_seq})


def pages(side: Any, kind: str, since: int, until: int, peer: str) -> Iterator[list[Any]]:
    """Every page of ``side.page(kind, ...)`` in (since, until] (a StoreSide or a RemoteSide).

    Bounded whatever a server answers: each page must move forward and stay within
    ``until``, at most ``MAX_EMPTY_PAGES`` pages in a row may be empty, and at most
    ``MAX_PAGES`` pages are read in one sync."""
    after: int | None = since
    empty = read = 0
    while after is not None:
        items, last = side.page(kind, after, until, peer)
        if last is not None and not after < last <= until:
            raise LocalMemError(f"{side.label} sent a page of {kind} ending at change {last}, outside "
                                f"({after}, {until}]: stopped")
        read += 1
        empty = 0 if items else empty + 1
        if empty > MAX_EMPTY_PAGES or read > MAX_PAGES:
            raise LocalMemError(f"{side.label} sent {read} pages of {kind} ({empty} empty in a row): past "
                                f"the bound of {MAX_PAGES} pages, {MAX_EMPTY_PAGES} empty in a row; stopped")
        after = last
        if items:
            yield items


def _memory_state(row: dict[str, Any]) -> MemoryState:
    """A memory row as a sync state; a row damaged on disk becomes a state naming the damage."""
    try:
        return MemoryState(row["id"], record=to_record({k: v for k, v in row.items()
                                                        if k not in ("change_seq", "hlc", "seen")}),
                           hlc=_stamp(row.get("hlc")), seen=_seen(row.get("seen")))
    except (ValueError, TypeError, KeyError) as exc:
        return MemoryState(str(row.get("id")), problem=f"its stored row cannot be read ({exc})")


def _tombstone(row: dict[str, Any]) -> MemoryState:
    return MemoryState(row["id"], deleted_at=row["deleted_at"], purged=bool(row["purged"]),
                       deleted_updated_at=row.get("deleted_updated_at"), hlc=_stamp(row.get("hlc")),
                       deleted_hlc=_stamp(row.get("deleted_hlc")), seen=_seen(row.get("seen")))


def _pins(value: Any) -> list[list[Any]]:
    """A noted batch's [id, stamp, updated_at] list; anything else (a peer file's rows are not
    trusted: too long, not JSON, too deep) is read as nothing to pin."""
    if not isinstance(value, str) or len(value) > PAGE * 400:
        return []
    try:
        pins = json.loads(value)
    except (ValueError, RecursionError):
        return []
    return [pin for pin in pins[:PAGE] if isinstance(pin, list) and len(pin) == 3] if isinstance(pins, list) else []


def _seen(value: Any) -> Seen:
    """A ``sync_seen`` summary as the sync statements read it (a JSON list of [replica, stamp],
    at most 17 rows); anything else, from a peer file's rows, is read as nothing seen."""
    try:
        rows = json.loads(value) if isinstance(value, str) else []
    except ValueError:
        return Seen()
    return from_rows(tuple(row) for row in rows if isinstance(row, list) and len(row) == 2) \
        if isinstance(rows, list) else Seen()


def _stamp(value: Any) -> str | None:
    """A stored clock stamp, or None for anything else (a peer file's rows are not trusted)."""
    return value if valid_stamp(value) else None


def _store_fields(fields: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in fields.items() if k != "content" and v is not None}
    return out


def _update_fields(fields: dict[str, Any]) -> dict[str, Any]:
    # None clears only the clearable fields; the others keep the stored value, which a
    # record read from a store never leaves None unless the field is optional anyway.
    return dict(fields)


def _edge(row: dict[str, Any]) -> EdgeState:
    return EdgeState(key=(row["src_id"], row["type"], row["dst_id"]), strength=row.get("strength"),
                     updated_at=row.get("updated_at"), properties=row.get("properties"),
                     deleted_at=row.get("deleted_at") if row.get("strength") is None else None,
                     hlc=_stamp(row.get("hlc")))
