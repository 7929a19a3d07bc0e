"""``localmem pull``: copy an AutoMem deployment into the local file, then keep it in step.

What AutoMem's API lets a client see, and so what this does:

* The listing is ``GET /graph/snapshot?limit=0``: every memory (id, content,
  tags, type, importance, confidence, timestamp, updated_at, metadata) and
  every edge between them, in one answer. AutoMem has no route that lists
  memories changed since a time (``since`` filters on ``timestamp``, the
  memory's own date, and the listing has no offset), so each pull reads the
  whole listing, bounded by the answer cap and the request deadline, and
  finds what changed locally: a hash per field of what the last pull took
  (``pull_seen``). Only changed memories are written (and re-embedded).
* Deletions: AutoMem keeps no tombstones. A memory the id map knows that is
  absent from a *complete* listing (as many memories as the server counts),
  and that ``GET /memory/<id>`` answers 404 for, was deleted there, and is
  deleted here unless it changed here since it was last in step (then it is
  kept, and the next push sends it back).
* Vectors: the listing has none, and AutoMem does not name the model that made
  its vectors: every memory pulled is embedded by the store's own model.

Ids are mapped both ways in push's id map (``push_ids``, ``push_edges``): a memory
pulled is recorded as one the server has, in the version stored, so a push after a
pull sends nothing back, and a pull after a push takes nothing of what it sent. A
pulled memory's local id derives from the server's (``pull_state.local_id_for``): a
pull killed between writing a batch and recording it finds that batch next time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..progress import ProgressBar, ProgressSteps
from ..storage.database import transaction
from ..storage.memory_fields import build_row
from ..storage.records import to_record
from ..timeparse import format_timestamp
from .deletion_guard import check_deletions
from .pull_deletes import delete_memories, deleted_since_stopped
from .pull_edges import pull_edges
from .pull_merge import (
    AUTOMEM,
    CHANGED_MEANWHILE,
    MERGE_ATTEMPTS,
    ChangedMeanwhile,
    changed_here,
    close_enough,
    expect_version,
    local_type,
    own_tags,
    same_instant,
    store_conflict_copy,
)
from .pull_state import PENDING, PULLED, PullState, local_id_for
from .pull_wire import FIELDS, BadRecord, RemoteMemory, local_metadata, read_memory
from .push import push_lock
from .push_client import PushClient, RemoteError
from .push_summary import Counts, ItemOutcomes
from .push_wire import MARKER, SERVER_METADATA, SERVER_TAG_PREFIX, field_hashes, memory_payload

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_BATCH = 100
MAX_BATCH = 1000
# Test hook: after writing the memories of the N-th batch and before recording them, say so on
# stderr and wait, so a test can kill the pull at its most awkward point.
PAUSE_ENV = "LOCALMEM_PULL_TEST_PAUSE_AFTER"
Update = tuple[RemoteMemory, list[str], dict[str, Any]]  # the server's memory, fields changed there, local row


@dataclass
class PullSummary(ItemOutcomes):
    remote: str
    server: str = "unknown"
    dry_run: bool = False
    listed: int = 0  # memories in the server's listing
    complete: bool = False  # the listing held every memory the server counts
    left: int = 0  # changes held back by --limit for the next pull
    memories: Counts = field(default_factory=Counts)
    edges: Counts = field(default_factory=Counts)
    embeddings: dict[str, Any] = field(default_factory=lambda: {"plan": "", "reembedded": 0})
    resumed: int = 0  # memories an interrupted pull had stored without recording them
    conflicts: int = 0
    conflict_copies: list[dict[str, Any]] = field(default_factory=list)  # same-field conflicts: the other version
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.nothing_failed

    def as_dict(self) -> dict[str, Any]:
        taken = self.memories.created + self.memories.updated
        return {
            "status": "success" if self.ok else "partial",
            "remote": self.remote, "server": self.server, "dry_run": self.dry_run,
            "listed": self.listed, "complete_listing": self.complete, "left_for_next_pull": self.left,
            "memories": dict(self.memories.__dict__), "edges": dict(self.edges.__dict__),
            "embeddings": self.embeddings, "resumed": self.resumed, "conflicts": self.conflicts,
            "conflict_copies": self.conflict_copies,
            "skipped": self.skipped, "failed": self.failed, "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "memories_per_second": round(taken / self.seconds, 1) if self.seconds > 0 and taken else None,
        }


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Puller(ProgressSteps):
    """One pull from the server ``client`` talks to into ``store``."""

    def __init__(self, store: MemoryStore, client: PushClient, *, dry_run: bool = False,
                 batch_size: int = DEFAULT_BATCH, limit: int | None = None,
                 progress: ProgressBar | None = None, allow_deletes: int | None = None) -> None:
        self.store = store
        self.allow_deletes = allow_deletes
        self.client = client
        self.state = PullState(store, client.url)
        self.dry_run = dry_run
        self.batch_size = max(1, min(batch_size, MAX_BATCH))
        self.limit = limit
        self.bar = progress
        self.summary = PullSummary(client.url, dry_run=dry_run)
        self._pause_after = int(os.environ.get(PAUSE_ENV) or 0)
        self._batches = 0
        self.listing: dict[str, RemoteMemory] = {}
        self.unreadable: set[str] = set()  # ids of remote memories skipped as bad: not deleted here
        self.edges: list[Any] = []
        self.map: dict[str, dict[str, Any]] = {}
        self._odd_types: set[str] = set()
        self._conflicts: list[str] = []
        self._kept: list[str] = []  # deleted on the server, changed here since
        self._own: list[str] = []  # deleted on the server, but written here (pushed), not pulled
        self._seen: dict[str, dict[str, str]] = {}  # remote id -> field hashes the last pull took
        # Called with a local id just before pull writes or records that memory (tests: a racing writer).
        self.before_write: Callable[[str], None] | None = None

    # -- the whole pull -------------------------------------------------------

    def run(self) -> PullSummary:
        started = time.perf_counter()
        self.read_server()
        nodes, edges, total = self.read_listing()
        self.read_memories(nodes)
        self.edges = edges
        self.summary.complete = total is not None and total == len(nodes)
        if not self.summary.complete:
            self.summary.warnings.append(
                f"the listing held {len(nodes)} of the {total if total is not None else 'unknown'} memories "
                "the server counts (one was written meanwhile, or has no importance): deletions there are "
                "not looked for this time")
        if not self.listing and not self.unreadable and self.summary.complete:
            known = len(self.state.id_map())
            if known:  # a server that lists nothing lost its data (a redeploy on a fresh volume)
                self.summary.complete = False
                self.summary.warnings.append(
                    f"the server lists no memories at all, while {known} are known from it: taken as data "
                    "lost there, not as deletions; nothing is deleted here")
        if self.dry_run:
            self.plan()
        else:
            if self.summary.complete:
                self.map = self.state.id_map()
                planned = sum(1 for rid, entry in self._deleted_there() if self._would_delete(rid, entry))
                with self.store.lock:
                    total = int(self.store.conn.execute(self.store.sql["memory_count"]).fetchone()[0])
                check_deletions(planned, total, self.allow_deletes, "this store")
            with push_lock(self.store, "pull"):
                self.state.register(complete=False, count=len(nodes))  # the rows the map refers to
                self.map = self.state.id_map()
                creates, updates, seen_only = self.classify()
                self.state.record_seen(seen_only)
                creates, updates = self._limited(creates, updates)
                self.update_memories(updates)
                self.create_memories(creates)
                if self.summary.complete:
                    self.delete_memories()
                self.map = self.state.id_map()
                self.pull_edges()
                self.state.register(complete=self.summary.complete, count=len(nodes))
        self._notes()
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def _notes(self) -> None:
        if self._conflicts:
            self.summary.warnings.append(
                f"{len(self._conflicts)} memories changed both here and on the server (such as "
                f"{', '.join(self._conflicts[:5])}): the fields changed only there were taken, those changed "
                "only here kept (the next push sends them)")
        if self.summary.conflict_copies:
            copies = self.summary.conflict_copies
            self.summary.warnings.append(
                f"{len(copies)} memories had the same field changed here and on the server (such as "
                f"{', '.join(c['id'] for c in copies[:5])}): the server's version is current, the local one kept "
                "as a conflict copy it supersedes (conflict_copies; the next push sends it)")
        if self._kept:
            self.summary.warnings.append(
                f"{len(self._kept)} memories deleted on the server were changed here since (such as "
                f"{', '.join(self._kept[:5])}): kept here, and the next push creates them there again")
        if self._own:
            self.summary.warnings.append(
                f"{len(self._own)} memories written here and pushed are gone from the server (such as "
                f"{', '.join(self._own[:5])}): pull deletes only what came from the server; kept here")
        if self._odd_types:
            self.summary.warnings.append(
                "types the store does not know (AutoMem keeps any type): "
                f"{', '.join(sorted(self._odd_types)[:10])}; those memories were classified here")

    def read_server(self) -> None:
        response = self.client.get("/health")
        if not response.ok:
            raise RemoteError(f"GET {self.client.url}/health answered {response.status}: {response.message()}",
                              status=response.status)
        body = response.body if isinstance(response.body, dict) else {}
        self.summary.server = "localmem" if body.get("service") == "localmem" else "automem"
        with self.store.lock:
            model = self.store.backend.meta("embedder")
        if self.store.dimensions is None:
            self.summary.embeddings["plan"] = "the local store has no vectors (embedder 'none'): none made"
        else:
            self.summary.embeddings["plan"] = (
                "the server's listing carries no vectors and AutoMem does not name its embedding model: "
                f"memories pulled are embedded here with the store's model ({model or 'unknown'})")

    def read_listing(self) -> tuple[list[Any], list[Any], int | None]:
        response = self.client.get("/graph/snapshot", limit=0)
        if not response.ok:
            raise RemoteError(f"GET {self.client.url}/graph/snapshot answered {response.status}: "
                              f"{response.message()} (pull reads AutoMem's graph snapshot to list memories)",
                              status=response.status)
        body = response.body
        if not isinstance(body, dict) or not isinstance(body.get("nodes"), list):
            raise RemoteError(f"GET {self.client.url}/graph/snapshot answered without a list of 'nodes'")
        edges = body.get("edges") if isinstance(body.get("edges"), list) else []
        stats = body.get("stats") if isinstance(body.get("stats"), dict) else {}
        total = stats.get("total_nodes")
        total = total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None
        return body["nodes"], edges, total

    def read_memories(self, nodes: list[Any]) -> None:
        for index, node in enumerate(nodes):
            try:
                memory = read_memory(node)
            except BadRecord as exc:
                ident = node.get("id") if isinstance(node, dict) else None
                if isinstance(ident, str) and len(ident) <= 128:
                    self.unreadable.add(ident)
                self.summary.skip("memory", repr(ident)[:80] if ident is not None else f"nodes[{index}]",
                                  str(exc))
                continue
            if memory.remote_id in self.listing:
                self.summary.skip("memory", memory.remote_id, "listed twice; the first is taken")
                continue
            self.listing[memory.remote_id] = memory
        self.summary.listed = len(nodes)

    # -- what changed -----------------------------------------------------------

    def classify(self) -> tuple[list[RemoteMemory], list[Update], list[tuple[str, dict[str, str]]]]:
        """New memories, changed ones (with the fields that changed and the local row compared),
        and unchanged ones whose hashes are to be recorded (first seen after a push, or changed
        only in what pull leaves out)."""
        seen = self._seen = self.state.seen()
        # Memories the server has in another version than the last pull took (or that no pull
        # took yet): compared with the local memory, so a change that is already here (sent by
        # a push, or made the same on both sides) is not written again.
        moved = [m for rid, m in self.listing.items() if rid in self.map and seen.get(rid) != m.hashes()]
        local = self.state.local_rows([self.map[m.remote_id]["local_id"] for m in moved])
        creates, updates, seen_only = [], [], []
        gone_here = 0
        sent = self.state.pushes_unrecorded()  # created there by a stopped push: the next push records them
        for rid, memory in self.listing.items():
            hashes = memory.hashes()
            entry = self.map.get(rid)
            if entry is None:
                if memory.marker in sent:
                    self.summary.skip("memory", rid, "created by a push stopped before recording it: the next "
                                                     "push records it (not pulled as a second copy)")
                else:
                    creates.append(memory)
                continue
            if not entry["present"]:
                gone_here += 1  # deleted here: the next push deletes it there
                continue
            previous = seen.get(rid)
            changed: list[str] = []
            if previous != hashes:
                row = local.get(entry["local_id"])
                if row is None:
                    continue  # deleted here since the map was read: the next push deletes it there
                changed = self._changed(memory, row)
            if changed:
                updates.append((memory, changed, row))
            else:
                self.summary.memories.unchanged += 1
                if previous != hashes:
                    seen_only.append((rid, hashes))
        if gone_here:
            self.summary.warnings.append(f"{gone_here} memories on the server were deleted here since; "
                                         "not pulled back (the next push deletes them there)")
        return creates, updates, seen_only

    def _changed(self, memory: RemoteMemory, row: dict[str, Any]) -> list[str]:
        """The fields the server changed since the last pull took them that differ from ``row``."""
        previous = self._seen.get(memory.remote_id)
        hashes = memory.hashes()
        return [name for name in self._differs(memory, row)
                if previous is None or hashes[name] != previous.get(name)]

    def _differs(self, memory: RemoteMemory, row: dict[str, Any]) -> list[str]:
        """The fields in which the server's memory differs from the local one (what AutoMem fills
        in itself, a confidence the local memory left unset, a timestamp written another way,
        does not count)."""
        remote = memory.fields
        metadata = json.loads(row["metadata"]) if row.get("metadata") else {}
        metadata = {k: v for k, v in metadata.items() if k not in SERVER_METADATA and k != MARKER}
        tags = json.loads(row["tags"]) if row.get("tags") else []
        checks = {
            "content": remote["content"] == row["content"],
            "tags": own_tags(remote["tags"], SERVER_TAG_PREFIX) == own_tags(tags, SERVER_TAG_PREFIX),
            "type": local_type(remote["type"]) in (None, row["type"]),
            "importance": remote["importance"] is None or close_enough(remote["importance"], row["importance"]),
            "confidence": row["confidence"] is None or remote["confidence"] is None
                          or close_enough(remote["confidence"], row["confidence"]),
            "timestamp": remote["timestamp"] is None or same_instant(remote["timestamp"], row["timestamp"]),
            "metadata": self._local_metadata(remote["metadata"]) == metadata,
        }
        return [name for name in FIELDS if not checks[name]]

    def _local_ref(self, remote_id: str) -> str | None:
        entry = self.map.get(remote_id)
        if entry is not None:
            return entry["local_id"]
        if remote_id in self.listing:
            return local_id_for(self.client.url, remote_id)
        return None

    def _local_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return local_metadata(metadata, self._local_ref)

    def _limited(self, creates: list[RemoteMemory], updates: list[Any]) -> tuple[list[RemoteMemory], list[Any]]:
        if self.limit is None:
            return creates, updates
        keep_updates = updates[:self.limit]
        keep_creates = creates[:max(0, self.limit - len(keep_updates))]
        self.summary.left = len(creates) + len(updates) - len(keep_creates) - len(keep_updates)
        if self.summary.left:
            self.summary.warnings.append(f"--limit {self.limit}: {self.summary.left} new or changed memories "
                                         "are left for the next pull")
        return keep_creates, keep_updates

    def plan(self) -> None:
        self.map = self.state.id_map()
        creates, updates, _ = self.classify()
        creates, updates = self._limited(creates, updates)
        self.summary.memories.created = len(creates)
        self.summary.memories.updated = len(updates)
        if self.summary.complete:
            self.summary.memories.deleted = len(self._deleted_there())
        self.summary.warnings.append("dry run: nothing was written and nothing recorded; edges are not planned")

    def _maybe_pause(self) -> None:
        self._batches += 1
        if self._pause_after and self._batches == self._pause_after:
            sys.stderr.write(f"pull: paused after writing batch {self._batches}\n")
            sys.stderr.flush()
            time.sleep(600)

    # -- memories -------------------------------------------------------------

    def _item(self, memory: RemoteMemory, names: tuple[str, ...] | list[str]) -> dict[str, Any]:
        item = {name: memory.fields[name] for name in names}
        if item.get("type") is not None:
            known = local_type(item["type"])
            if known is None:
                self._odd_types.add(item["type"][:40])
            item["type"] = known
        if "metadata" in item:
            item["metadata"] = self._local_metadata(item["metadata"])
        return {k: v for k, v in item.items() if v is not None or k in ("confidence",)}

    def create_memories(self, creates: list[RemoteMemory]) -> None:
        self.phase("pulling new", len(creates))
        now = self.store.now()
        for part in _chunks(creates, self.batch_size):
            items: dict[str, tuple[RemoteMemory, dict[str, Any]]] = {}
            for memory in part:
                item = self._item(memory, FIELDS)
                item["id"] = local_id_for(self.client.url, memory.remote_id)
                if memory.updated_at and memory.fields.get("timestamp"):
                    item["updated_at"] = memory.updated_at
                try:
                    build_row(item, now=now)  # the store's own checks, before the batch
                except ValidationError as exc:
                    self.summary.skip("memory", memory.remote_id, exc.message)
                    continue
                items[item["id"]] = (memory, item)
            there = self.state.existing(list(items))  # stored by a pull stopped before recording them
            self.summary.resumed += len(there)
            deleted_since_stopped(self, items, there)
            new = [item for local_id, (_, item) in items.items() if local_id not in there]
            # Noted before the write, with the version written: a push run after a pull stopped here does
            # not send them back, and the pull that resumes it tells an edit made here since from the server's.
            self.state.record_seen([(memory.remote_id, {**memory.hashes(), PENDING: written.get("updated_at") or ""})
                                    for memory, written in (items[item["id"]] for item in new)])
            stored = self._store(new)
            if self.store.dimensions is not None:
                self.summary.embeddings["reembedded"] += len(stored)
            self._maybe_pause()
            if self.before_write is not None:
                for local_id in (i for i in items if i in stored):  # tests: a writer between write and record, in order
                    self.before_write(local_id)
            done = there | stored
            self._record({local_id: items[local_id][0] for local_id in items if local_id in done}, created=True,
                         resumed=there)
            self.summary.memories.created += len(stored)
            self.advance(len(part))

    def _store(self, items: list[dict[str, Any]]) -> set[str]:
        if not items:
            return set()
        try:
            return set(self.store.store_many(items))
        except (ValidationError, LocalMemError):
            pass  # one refused item refuses the batch: one at a time, to say which
        stored = set()
        for item in items:
            try:
                stored.add(self.store.store(**item))
            except (ValidationError, LocalMemError) as exc:
                self.summary.fail("memory", item["id"], str(exc))
        return stored

    def _remote_ids(self) -> dict[str, str]:
        """local id -> the server's id, of every memory the map or this listing names."""
        remote_ids = {entry["local_id"]: rid for rid, entry in self.map.items()}
        remote_ids.update({local_id_for(self.client.url, rid): rid for rid in self.listing if rid not in self.map})
        return remote_ids

    def _record(self, taken: dict[str, RemoteMemory], *, created: bool,
                pulled: dict[str, list[str]] | None = None, resumed: set[str] | None = None,
                remote_ids: dict[str, str] | None = None) -> None:
        """Record, per local id, that the server has this version (push's map) and what was taken,
        from the rows read in the same transaction (an edit made here meanwhile stays unsent).

        A memory an interrupted pull stored (``resumed``) may be an older version of the server's:
        no field hashes are recorded for it, so the next pull compares it with the server's."""
        with self.store.lock, transaction(self.store.conn):
            self._record_rows(taken, created, pulled, resumed, remote_ids or self._remote_ids())

    def _record_rows(self, taken: dict[str, RemoteMemory], created: bool, pulled: dict[str, list[str]] | None,
                     resumed: set[str] | None, remote_ids: dict[str, str]) -> None:
        rows = self.state.local_rows(list(taken))
        remote_ids = {**remote_ids, **{local_id: memory.remote_id for local_id, memory in taken.items()}}
        entries = []
        for local_id, memory in taken.items():
            row = rows.get(local_id)
            if row is None:
                if created:  # deleted here since this pull wrote it: mapped, so the next push deletes it there
                    entries.append({"local_id": local_id, "remote_id": memory.remote_id, "pushed_seq": 0,
                                    "push_fields": {}, "pulled": memory.hashes(), "created": True})
                continue
            payload, complete = memory_payload(row, AUTOMEM, remote_ids, with_embedding=False)
            hashes = field_hashes(payload, AUTOMEM, complete=complete)
            entry = self.map.get(memory.remote_id)
            pushed_seq = row["change_seq"]
            pulled_hashes = memory.hashes()
            if resumed and local_id in resumed:  # written by a stopped pull: this is what it wrote
                written = {k: v for k, v in self._seen.get(memory.remote_id, {}).items() if k != PENDING}
                # Edited here: a field the server has as written differs here, or (updated_at moved) any field.
                moved_here = not same_instant(row["updated_at"], self._seen.get(memory.remote_id, {}).get(PENDING))
                edited = [name for name in self._differs(memory, row)
                          if written.get(name) == pulled_hashes[name] or moved_here]
                if edited:
                    pushed_seq, hashes = 0, {**hashes, **{name: "" for name in edited}}
                pulled_hashes = written
            elif created and (edited := self._differs(memory, row)):  # edited here since this pull wrote it:
                pushed_seq, hashes = 0, {**hashes, **{name: "" for name in edited}}  # the next push sends those
            if entry is not None and not created:
                old = json.loads(entry["fields"] or "{}")
                if (entry["change_seq"] or 0) > entry["pushed_seq"]:  # changed here too: push still sends it
                    pushed_seq = entry["pushed_seq"]
                    hashes = {**old, **{name: hashes[name] for name in (pulled or {}).get(local_id, [])
                                        if name in hashes}}
            entries.append({"local_id": local_id, "remote_id": memory.remote_id, "pushed_seq": pushed_seq,
                            "push_fields": hashes, "pulled": pulled_hashes, "created": created})
        self.state.record(entries)

    def update_memories(self, updates: list[Update]) -> None:
        self.phase("pulling changes", len(updates))
        remote_ids = self._remote_ids()
        for memory, changed, row in updates:
            self._update(memory, changed, row, remote_ids)
            self.advance()

    def _update(self, memory: RemoteMemory, changed: list[str], row: dict[str, Any],
                remote_ids: dict[str, str]) -> None:
        """Take the server's changes into one memory, compare-and-set: a memory changed here after
        ``row`` was read is read again and merged again, ``MERGE_ATTEMPTS`` times at most."""
        local_id = row["id"]
        for _ in range(MERGE_ATTEMPTS):
            if self.before_write is not None:
                self.before_write(local_id)
            try:
                with self.store.lock, transaction(self.store.conn):
                    expect_version(self.store, local_id, row["change_seq"])
                    copy, reembedded = self._merge(memory, changed, row, remote_ids)
            except ChangedMeanwhile:
                fresh = self.state.local_rows([local_id]).get(local_id)
                entry = self.state.map_entry(memory.remote_id)
                if fresh is None or entry is None:
                    self.summary.skip("memory", local_id, "deleted here during the pull")
                    return
                self.map[memory.remote_id], row = entry, fresh
                changed = self._changed(memory, row)
                if not changed:  # the change made here meanwhile is the server's
                    self.summary.memories.unchanged += 1
                    self.state.record_seen([(memory.remote_id, memory.hashes())])
                    return
                continue
            except NotFoundError:
                self.summary.skip("memory", local_id, "deleted here during the pull")
                return
            except (ValidationError, LocalMemError) as exc:
                self.summary.fail("memory", memory.remote_id, str(exc))
                return
            # Committed: only now counted.
            if (row["change_seq"] or 0) > self.map[memory.remote_id]["pushed_seq"]:
                self.summary.conflicts += 1
                self._conflicts.append(local_id)
            if copy is not None:
                self.summary.conflict_copies.append(copy)
            self.summary.embeddings["reembedded"] += reembedded
            self.summary.memories.updated += 1
            return
        self.summary.skip("memory", local_id, f"{CHANGED_MEANWHILE} in each of {MERGE_ATTEMPTS} rounds: "
                                              "not taken this time; the next pull tries again")

    def _merge(self, memory: RemoteMemory, changed: list[str], row: dict[str, Any],
               remote_ids: dict[str, str]) -> tuple[dict[str, Any] | None, bool]:
        """Inside the write transaction: write the server's changes into the local memory ``row``
        (a field changed on both sides first keeps the local version as a conflict copy), and
        record what was taken. The conflict copy made (or None), and whether it re-embedded."""
        # The row is what was decided on (and checked): its change number, not the map's older one.
        entry = self.map[memory.remote_id] = {**self.map[memory.remote_id], "change_seq": row["change_seq"]}
        local_id = row["id"]
        copy = None
        both = sorted(set(changed) & changed_here(row, entry, remote_ids))
        if both:  # the server's version is current, the local one kept (pull_merge's docstring)
            mine = to_record({k: v for k, v in row.items() if k != "change_seq"})
            kept_as = store_conflict_copy(self.store, local_id, mine, format_timestamp(self.store.now()))
            copy = {"id": local_id, "fields": both, "kept_as": kept_as}
        after = self.store.update(local_id, **self._item(memory, changed))
        self._record({local_id: memory}, created=False, pulled={local_id: changed}, remote_ids=remote_ids)
        return copy, after["content"] != row["content"] and self.store.dimensions is not None

    def _deleted_there(self) -> list[tuple[str, dict[str, Any]]]:
        return [(rid, entry) for rid, entry in self.map.items()
                if rid not in self.listing and rid not in self.unreadable]

    def _came_from_here(self, remote_id: str, entry: dict[str, Any]) -> bool:
        """Whether the local memory was pulled from this server, under this id or one before it
        (``remote_origins``), not written here and pushed: only those go when the server drops them."""
        return entry["origin"] == PULLED

    def _would_delete(self, remote_id: str, entry: dict[str, Any]) -> bool:
        return (bool(entry["present"]) and self._came_from_here(remote_id, entry)
                and not (entry["change_seq"] or 0) > entry["pushed_seq"])

    def delete_memories(self) -> None:
        delete_memories(self)

    # -- edges ------------------------------------------------------------------

    def pull_edges(self) -> None:
        pull_edges(self)

