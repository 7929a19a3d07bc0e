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
* Vectors: the listing has none, and AutoMem does not say which model made
  its vectors, so every memory pulled is embedded by the store's own model
  through the store's normal write path.

Ids are mapped both ways in push's id map (``push_ids``, ``push_edges``): a
memory pulled is recorded as one the server has, in the version stored, so a
push after a pull sends nothing back, and a pull after a push takes nothing
of what it sent. A pulled memory gets a local id derived from the server's
(``pull_state.local_id_for``), so a pull killed between writing a batch and
recording it finds that batch on its next run instead of storing it twice.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..classify import normalize_memory_type
from ..progress import ProgressBar, ProgressSteps
from ..storage.memory_fields import build_row
from ..timeparse import parse_timestamp
from ..trash import move_to_trash
from .deletion_guard import check_deletions
from .pull_edges import pull_edges
from .pull_state import PullState, local_id_for
from .pull_wire import FIELDS, BadRecord, RemoteMemory, read_memory
from .push import push_lock
from .push_client import PushClient, RemoteError
from .push_summary import Counts, ItemOutcomes
from .push_wire import MARKER, SERVER_METADATA, SERVER_TAG_PREFIX, ServerProfile, field_hashes, memory_payload

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_BATCH = 100
MAX_BATCH = 1000
# Test hook: after writing the memories of the N-th batch and before recording them, say so on
# stderr and wait, so a test can kill the pull at its most awkward point.
PAUSE_ENV = "LOCALMEM_PULL_TEST_PAUSE_AFTER"
AUTOMEM = ServerProfile("automem", None, None)


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
            "skipped": self.skipped, "failed": self.failed, "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "memories_per_second": round(taken / self.seconds, 1) if self.seconds > 0 and taken else None,
        }


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _same_instant(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    try:
        return parse_timestamp(a) == parse_timestamp(b)
    except (LocalMemError, ValueError):
        return a == b


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), abs_tol=1e-6)


def _local_type(value: str | None) -> str | None:
    """The store's name for a remote type; None (the store classifies the memory) for a type
    it does not know (AutoMem keeps any type as given)."""
    if value is None:
        return None
    try:
        return normalize_memory_type(value)
    except ValidationError:
        return None


def _own_tags(tags: list[str]) -> list[str]:
    return sorted({t.lower() for t in tags if not t.lower().startswith(SERVER_TAG_PREFIX)})


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
                f"{', '.join(self._conflicts[:5])}): the fields changed there were taken, the rest of the "
                "local change kept (the next push sends it)")
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

    def classify(self) -> tuple[list[RemoteMemory], list[tuple[RemoteMemory, list[str]]], list[tuple[str, dict[str, str]]]]:
        """New memories, changed ones (with the fields that changed), and unchanged ones whose
        hashes are to be recorded (first seen after a push, or changed only in what pull leaves out)."""
        seen = self.state.seen()
        # Memories the server has in another version than the last pull took (or that no pull
        # took yet): compared with the local memory, so a change that is already here (sent by
        # a push, or made the same on both sides) is not written again.
        moved = [m for rid, m in self.listing.items() if rid in self.map and seen.get(rid) != m.hashes()]
        local = self.state.local_rows([self.map[m.remote_id]["local_id"] for m in moved])
        creates, updates, seen_only = [], [], []
        gone_here = 0
        for rid, memory in self.listing.items():
            hashes = memory.hashes()
            entry = self.map.get(rid)
            if entry is None:
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
                differs = self._differs(memory, row)
                changed = [name for name in differs if previous is None or hashes[name] != previous.get(name)]
            if changed:
                updates.append((memory, changed))
            else:
                self.summary.memories.unchanged += 1
                if previous != hashes:
                    seen_only.append((rid, hashes))
        if gone_here:
            self.summary.warnings.append(f"{gone_here} memories on the server were deleted here since; "
                                         "not pulled back (the next push deletes them there)")
        return creates, updates, seen_only

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
            "tags": _own_tags(remote["tags"]) == _own_tags(tags),
            "type": _local_type(remote["type"]) in (None, row["type"]),
            "importance": remote["importance"] is None or _close(remote["importance"], row["importance"]),
            "confidence": row["confidence"] is None or remote["confidence"] is None
                          or _close(remote["confidence"], row["confidence"]),
            "timestamp": remote["timestamp"] is None or _same_instant(remote["timestamp"], row["timestamp"]),
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
        """Metadata with the server's ids it names (``superseded_by``) as local ids; one naming a
        memory this pull does not have is dropped."""
        out = dict(metadata)
        ref = out.get("superseded_by")
        if isinstance(ref, str):
            local = self._local_ref(ref)
            if local is None:
                del out["superseded_by"]
            else:
                out["superseded_by"] = local
        return out

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

    # -- the test pause ---------------------------------------------------------

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
            local_type = _local_type(item["type"])
            if local_type is None:
                self._odd_types.add(item["type"][:40])
            item["type"] = local_type
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
            new = [item for local_id, (_, item) in items.items() if local_id not in there]
            stored = self._store(new)
            if self.store.dimensions is not None:
                self.summary.embeddings["reembedded"] += len(stored)
            self._maybe_pause()
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

    def _record(self, taken: dict[str, RemoteMemory], *, created: bool,
                pulled: dict[str, list[str]] | None = None, resumed: set[str] | None = None) -> None:
        """Record, per local id, that the server has this version (push's map) and what was taken.

        A memory an interrupted pull stored (``resumed``) may be an older version of the server's:
        no field hashes are recorded for it, so the next pull compares it with the server's."""
        rows = self.state.local_rows(list(taken))
        remote_ids = {entry["local_id"]: rid for rid, entry in self.map.items()}
        remote_ids.update({local_id_for(self.client.url, rid): rid for rid in self.listing if rid not in self.map})
        remote_ids.update({local_id: memory.remote_id for local_id, memory in taken.items()})
        entries = []
        for local_id, memory in taken.items():
            row = rows.get(local_id)
            if row is None:
                continue
            payload, complete = memory_payload(row, AUTOMEM, remote_ids, with_embedding=False)
            hashes = field_hashes(payload, AUTOMEM, complete=complete)
            entry = self.map.get(memory.remote_id)
            pushed_seq = row["change_seq"]
            if entry is not None and not created:
                old = json.loads(entry["fields"] or "{}")
                if (entry["change_seq"] or 0) > entry["pushed_seq"]:  # changed here too: push still sends it
                    pushed_seq = entry["pushed_seq"]
                    hashes = {**old, **{name: hashes[name] for name in (pulled or {}).get(local_id, [])
                                        if name in hashes}}
            entries.append({"local_id": local_id, "remote_id": memory.remote_id, "pushed_seq": pushed_seq,
                            "push_fields": hashes,
                            "pulled": {} if resumed and local_id in resumed else memory.hashes()})
        self.state.record(entries)

    def update_memories(self, updates: list[tuple[RemoteMemory, list[str]]]) -> None:
        self.phase("pulling changes", len(updates))
        for part in _chunks(updates, self.batch_size):
            taken: dict[str, RemoteMemory] = {}
            pulled: dict[str, list[str]] = {}
            for memory, changed in part:
                entry = self.map[memory.remote_id]
                local_id = entry["local_id"]
                if (entry["change_seq"] or 0) > entry["pushed_seq"]:
                    self.summary.conflicts += 1
                    self._conflicts.append(local_id)
                fields = self._item(memory, changed)
                try:
                    before = self.store.get(local_id)["content"]
                    after = self.store.update(local_id, **fields)
                except NotFoundError:
                    self.summary.skip("memory", local_id, "deleted here during the pull")
                    continue
                except (ValidationError, LocalMemError) as exc:
                    self.summary.fail("memory", memory.remote_id, str(exc))
                    continue
                if after["content"] != before and self.store.dimensions is not None:
                    self.summary.embeddings["reembedded"] += 1
                taken[local_id] = memory
                pulled[local_id] = changed
                self.summary.memories.updated += 1
                self.advance()
            self._record(taken, created=False, pulled=pulled)

    def _deleted_there(self) -> list[tuple[str, dict[str, Any]]]:
        return [(rid, entry) for rid, entry in self.map.items()
                if rid not in self.listing and rid not in self.unreadable]

    def _came_from_here(self, remote_id: str, entry: dict[str, Any]) -> bool:
        """Whether the local memory was pulled from this server (its id is derived from the
        server's), not written here and pushed: only those are deleted when the server drops them."""
        return entry["local_id"] == local_id_for(self.client.url, remote_id)

    def _would_delete(self, remote_id: str, entry: dict[str, Any]) -> bool:
        return (bool(entry["present"]) and self._came_from_here(remote_id, entry)
                and not (entry["change_seq"] or 0) > entry["pushed_seq"])

    def delete_memories(self) -> None:
        gone = self._deleted_there()
        self.phase("deleting", len(gone))
        forget: list[tuple[str, str]] = []
        listed_after_all = 0
        for rid, entry in gone:
            local_id = entry["local_id"]
            if entry["present"]:
                # Absent from the listing is not proof (its count can match by chance while a memory
                # is written and another left out): the server is asked for the memory itself.
                there = self._still_there(rid)
                if there is None:
                    self.advance()
                    continue
                if there:
                    listed_after_all += 1
                    self.advance()
                    continue
            if not entry["present"]:
                forget.append((local_id, rid))  # gone on both sides
            elif not self._came_from_here(rid, entry):
                self._own.append(local_id)  # written here: the server losing it deletes nothing here
            elif (entry["change_seq"] or 0) > entry["pushed_seq"]:
                self.summary.conflicts += 1
                self._kept.append(local_id)
                forget.append((local_id, rid))
            else:
                if move_to_trash(self.store, local_id, f"pull from {self.client.url}"):
                    self.summary.memories.deleted += 1
                forget.append((local_id, rid))
            self.advance()
        self.state.forget(forget)
        if listed_after_all:
            self.summary.warnings.append(f"{listed_after_all} memories missing from the listing are still on the "
                                         "server (GET /memory answered): not deleted here")

    def _still_there(self, remote_id: str) -> bool | None:
        """Whether the server has the memory (None: it did not say; reported)."""
        response = self.client.get(f"/memory/{self.client.quoted(remote_id)}")
        if response.status == 404:
            return False
        if response.ok:
            return True
        self.summary.fail("memory", remote_id, f"not deleted here: GET /memory answered {response.status}: "
                                               f"{response.message()}")
        return None

    # -- edges ------------------------------------------------------------------

    def pull_edges(self) -> None:
        pull_edges(self)

