"""``localmem push``: copy a store into an AutoMem (or localmem) server, then keep it in step.

The first push creates every memory and edge on the server; the server's
ids go into the local file's id map (``push_map``), per server. A later push
sends only what changed since: deletions (a mapped memory that is gone
here), updates (a memory whose change counter moved; only the fields that
differ from what the server was sent), new memories, new and changed edges,
and edge removals where the server has a route for them.

Exactly once, even when stopped: a create is marked pending in the local
file before it is sent and recorded when the server answers. A push that
finds pending creates (the previous run stopped between the two, or an
answer timed out) looks them up on the server by the ``metadata.localmem_id``
each pushed memory carries, records those it finds (and deletes any
duplicates), and sends the rest again.

A memory the server lost, about to be created there again, is first looked for there as another store's
equal copy of it (``push_adopt``): two stores that made the same change send it back once. On ``localmem serve``
a memory already there under the id of one being created, that no push put there (no marker), is taken when it is
the same version (``push_adopt.served_differences``) and created apart, said, when not.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError
from ..progress import ProgressBar, ProgressSteps
from ..storage.database import MEMORY_PATH
from ..timeparse import format_timestamp, parse_timestamp, shifted
from .pull_state import local_id_for
from .push_adopt import CopyFinder, served_differences
from .push_client import PushClient, RemoteError, Uncertain
from .push_edges import delete_edges, push_edges
from .push_enrichment import EnrichmentWait
from .push_map import PushMap
from .push_summary import PushSummary
from .push_wire import (
    MARKER,
    ServerProfile,
    field_hashes,
    memory_payload,
    merge_server_additions,
    read_profile,
    referenced_ids,
)

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_BATCH = 100
MAX_BATCH = 500  # both servers' limit per batch request
# Test hook: exit right after the N-th create was answered, before its id is recorded,
# to check that the next push neither loses nor duplicates it.
CRASH_ENV = "LOCALMEM_PUSH_TEST_CRASH_AFTER"


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


@contextmanager
def push_lock(store: MemoryStore, what: str = "push") -> Iterator[None]:
    """One push or pull per database at a time (two would both create the same memories)."""
    if store.path == MEMORY_PATH:
        yield
        return
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    path = store.path + ".push-lock"
    try:  # never through a symlink: in a shared folder another user could point it anywhere
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LocalMemError(f"the {what} lock {path} is a symbolic link; refusing to follow it "
                                "(remove it: localmem makes the file itself)") from None
        raise
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LocalMemError(f"another 'localmem push' or 'localmem pull' of {store.path} is running; "
                                f"this {what} waits for none") from None
        yield
    finally:
        os.close(fd)


class Pusher(ProgressSteps):
    """One push of ``store`` to the server ``client`` talks to."""

    def __init__(self, store: MemoryStore, client: PushClient, *, tags: list[str] | None = None,
                 dry_run: bool = False, batch_size: int = DEFAULT_BATCH,
                 progress: ProgressBar | None = None) -> None:
        self.store = store
        self.client = client
        self.map = PushMap(store, client.url, tags)
        self.dry_run = dry_run
        self.batch_size = max(1, min(batch_size, MAX_BATCH))
        self.bar = progress
        self.summary = PushSummary(client.url, dry_run=dry_run)
        self.profile = ServerProfile("automem", None, None)
        self.enrichment = EnrichmentWait(client, None)  # read_server sets it from the server's health
        self.carry = False
        self._answers = 0
        self._crash_after = int(os.environ.get(CRASH_ENV) or 0)
        self._no_edge_delete = False
        self._pulled: set[str] = set()  # local ids of memories a stopped pull wrote and did not record
        self._adopted: dict[str, str] = {}  # local id -> another store's copy there, recorded as this memory's
        self._copies = CopyFinder(client)

    # -- the whole push -------------------------------------------------------

    def run(self) -> PushSummary:
        started = time.perf_counter()
        self.read_server()
        if self.dry_run:
            self.plan()
        else:
            with push_lock(self.store):
                self.map.register(self.profile.kind)
                self.summary.recovered = len(self.reconcile([row["local_id"] for row in self.map.pending()]))
                self.delete_memories()
                self.update_memories()
                self.create_memories()
                self.update_memories()  # what the creates left incomplete (ids they name)
                self._say_adopted()
                push_edges(self)
                delete_edges(self)
                self.summary.warnings += self.enrichment.notes()
        self.summary.seconds = time.perf_counter() - started
        self.summary.retried = self.client.retried
        return self.summary

    def read_server(self) -> None:
        response = self.client.get("/health")
        if not response.ok:
            raise RemoteError(f"GET {self.client.url}/health answered {response.status}: {response.message()}",
                              status=response.status)
        self.profile = read_profile(response.body)
        self.enrichment = EnrichmentWait(self.client, response.body)
        self.summary.server = self.profile.kind
        with self.store.lock:
            recorded = self.store.backend.meta("embedder")
        self.carry, reason = self.profile.embedding_plan(self.store.dimensions, recorded)
        self.summary.embeddings["plan"] = reason
        if not self.profile.localmem:
            self.summary.warnings.append(
                "AutoMem assigns its own ids (the map is kept in the local file), keeps only the edge "
                "properties its registry lists, and its enrichment adds entity tags and metadata")

    def plan(self) -> None:
        counts = self.map.counts()
        summary = self.summary
        summary.memories.created = counts["to_create"]
        summary.memories.updated = counts["to_update"]
        summary.memories.deleted = counts["to_delete"]
        planned = self.map.edges_planned()
        summary.edges.created = planned["to_send"]
        summary.edges.skipped = planned["unsendable"]
        summary.edges.deleted = len(self.map.edges_deleted())
        if counts["pending"]:
            summary.warnings.append(f"{counts['pending']} creates of an interrupted push will be looked "
                                    "up on the server first")
        summary.warnings.append("dry run: nothing was sent and nothing recorded; 'updated' counts memories "
                                "changed since they were sent, 'created' edges new or changed ones")

    # -- finding what an interrupted push created -----------------------------

    def reconcile(self, local_ids: list[str]) -> dict[str, str]:
        """Look up pending creates on the server: record those found, forget the rest.

        Returns local id -> server id of those found. Duplicates (two server
        memories with the same marker) are deleted, so each memory is there once.
        """
        if not local_ids:
            return {}
        wanted = set(local_ids)
        found = self._find_on_server(wanted)
        kept: dict[str, str] = {}
        for local_id, remote_ids in found.items():
            # Two stores that pulled a memory hold it under one local id, so their copies of it created again carry
            # the same marker: one this store already knows as another memory (it pulled it) is not this create.
            remote_ids = [rid for rid in remote_ids if not self.map.is_mapped(rid, besides=local_id)]
            if not remote_ids:
                continue
            keep, *extra = remote_ids
            kept[local_id] = keep
            for duplicate in extra:
                if self.client.request("DELETE", f"/memory/{self.client.quoted(duplicate)}").status in (200, 404):
                    self.summary.duplicates_removed += 1
        # Change counter 0: the update pass compares every field and sends what differs.
        self.map.record([(local_id, remote_id, 0, {}) for local_id, remote_id in kept.items()])
        self.map.forget(sorted(wanted - set(kept)))
        return kept

    def _find_on_server(self, wanted: set[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        if self.profile.localmem:  # ids are honoured: the memory has its local id there
            for local_id in sorted(wanted):
                response = self.client.get(f"/memory/{self.client.quoted(local_id)}")
                memory = response.body.get("memory") if response.ok and isinstance(response.body, dict) else None
                if isinstance(memory, dict) and _marker(memory) == local_id and _usable_id(memory.get("id")):
                    found[local_id] = [memory["id"]]
            return found
        # AutoMem: every memory since the earliest pending one, from its graph snapshot.
        response = self.client.get("/graph/snapshot", limit=0, since=self._pending_since(wanted))
        nodes = response.body.get("nodes") if response.ok and isinstance(response.body, dict) else None
        if nodes is None and response.ok and isinstance(response.body, dict):
            nodes = []  # no memories since then
        problem = (f"answered {response.status}" if not response.ok else _snapshot_problem(nodes))
        if problem:
            self.summary.warnings.append(
                f"could not look up {len(wanted)} memories of an interrupted push (GET /graph/snapshot "
                f"{problem}); they are sent again and may be on the server twice")
            return found
        for node in nodes:
            marker = _marker(node)
            if marker in wanted:
                found.setdefault(marker, []).append(node["id"])
        return found

    def _pending_since(self, wanted: set[str]) -> str | None:
        """A day before the earliest pending create's timestamp (None: no readable one)."""
        stamps = []
        for row in self.map.pending():
            if row["local_id"] in wanted and row["timestamp"]:
                try:
                    stamps.append(parse_timestamp(row["timestamp"]))
                except LocalMemError:
                    continue  # unreadable: the look-up just reaches further back
        # Held at the calendar's start: a memory stamped 0001-01-01 has no day before it.
        return format_timestamp(shifted(min(stamps), -timedelta(days=1))) if stamps else None

    # -- memories -------------------------------------------------------------

    def delete_memories(self) -> None:
        rows = self.map.deleted()
        self.phase("deleting", len(rows))
        done = []
        for row in rows:
            response = self.client.request("DELETE", f"/memory/{self.client.quoted(row['remote_id'])}")
            if response.status in (200, 204, 404):  # 404: already gone there
                done.append(row["local_id"])
                self.summary.memories.deleted += 1
            else:
                self.summary.fail("memory", row["local_id"], f"DELETE answered {response.status}: "
                                                             f"{response.message()}")
            self.advance()
        self.map.forget(done, with_edges=True)

    def _references(self, rows: Iterable[dict[str, Any]]) -> dict[str, str]:
        refs = []
        for row in rows:
            metadata = json.loads(row["metadata"]) if row.get("metadata") else {}
            refs += referenced_ids(metadata)
        return self.map.remote_ids(refs)

    def create_memories(self) -> None:
        """Create what the server lacks, memories that others name first.

        A superseded memory names its replacement (``metadata.superseded_by``).
        Created before it, it would need an update right after its create, and
        AutoMem's enrichment of that create writes back its own copy of the
        metadata, losing the update. So passes create only memories whose every
        reference is already on the server, while that makes progress; a last
        pass creates the rest (references the push will not send, or cycles),
        which the update pass then completes.
        """
        self.phase("creating", self.map.counts()["to_create"])
        whole_only = True
        attempted: set[str] = set()  # a create that failed is not tried again by a later pass
        # Written by a pull stopped before it recorded them: the server has them (the next pull records them).
        self._pulled = {local_id_for(self.client.url, rid) for rid in self.map.pulled_unrecorded()}
        while True:
            created = self.summary.memories.created
            deferred = self._create_pass(whole_only=whole_only, attempted=attempted)
            if not deferred or not whole_only:
                return
            if self.summary.memories.created == created:
                whole_only = False  # no progress: send the rest as they are

    def _create_pass(self, *, whole_only: bool, attempted: set[str]) -> int:
        """One pass over the memories to create; returns how many were held back."""
        held_back = 0
        for page in self.map.pages("push_to_create"):
            page = [row for row in page if row["id"] not in attempted]
            for row in page:
                if row["id"] in self._pulled:
                    attempted.add(row["id"])
                    self.summary.skip("memory", row["id"], "written by a pull that was stopped before recording "
                                                           "it: the server has it; the next pull records it")
            page = [row for row in page if row["id"] not in self._pulled]
            for part in chunks(page, self.batch_size):
                ids = self._references(part)
                items = [(row, *memory_payload(row, self.profile, ids, with_embedding=self.carry))
                         for row in part]
                if whole_only:
                    held_back += sum(1 for _, _, complete in items if not complete)
                    items = [item for item in items if item[2]]
                attempted.update(row["id"] for row, _, _ in items)
                items = self._adopt_copies(items)
                batched = [item for item in items if self.profile.batch_keeps(item[1])]
                single = [item for item in items if not self.profile.batch_keeps(item[1])]
                if batched:
                    self.create_batch(batched)
                if single:
                    self.create_singles(single)
        return held_back

    def _adopt_copies(self, items: list[tuple[dict[str, Any], dict[str, Any], bool]]
                      ) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
        """Of memories about to be created, those the server had before and another store created there again
        in the same version are recorded as that copy (push_adopt.py); returns the rest, to be created."""
        if self.profile.localmem or not items:
            return items
        again = self.map.created_again([row["id"] for row, _, _ in items])
        taken = set(self._adopted.values())
        rest, records = [], []
        for item in items:
            row, payload, complete = item
            remote_id = None
            if row["id"] in again:
                remote_id, problem = self._copies.find(payload, lambda rid: rid in taken or self.map.is_mapped(rid))
                if problem:
                    self.summary.warnings.append(f"could not look for another store's copy of memory {row['id']}, "
                                                 f"which the server lost ({problem}); created again")
            if remote_id is None:
                rest.append(item)
                continue
            taken.add(remote_id)
            records.append(self._adopted_as(item, remote_id))
            self.advance()
        self.map.record(records)
        return rest

    def _adopted_as(self, item: tuple[dict[str, Any], dict[str, Any], bool], remote_id: str
                    ) -> tuple[str, str, int, dict[str, str]]:
        """The record of a memory taken as the server's ``remote_id``, equal to it: nothing sent."""
        self._note_adopted(item[0]["id"], remote_id)
        return self._record_of(item, remote_id)

    def _note_adopted(self, local_id: str, remote_id: str) -> None:
        self._adopted[local_id] = remote_id
        self.summary.adopted += 1

    def _say_adopted(self) -> None:
        if self._adopted:
            named = ", ".join(f"{lid} as {rid}" for lid, rid in sorted(self._adopted.items())[:5])
            self.summary.warnings.append(
                f"{len(self._adopted)} memories were already there in the same version (another store's copy of "
                f"one the server lost, or on localmem serve one under its id that no push put there): recorded as "
                f"that memory, not sent again ({named}" + (", …)" if len(self._adopted) > 5 else ")"))

    def _created(self, item: tuple[dict[str, Any], dict[str, Any], bool], remote_id: str
                 ) -> tuple[str, str, int, dict[str, str]]:
        payload = item[1]
        self.summary.memories.created += 1
        if "embedding" in payload:
            self.summary.embeddings["sent"] += 1
        elif self.profile.vector_size is not None:
            self.summary.embeddings["server_embedded"] += 1
        self._answered()
        return self._record_of(item, remote_id)

    def _record_of(self, item: tuple[dict[str, Any], dict[str, Any], bool], remote_id: str
                   ) -> tuple[str, str, int, dict[str, str]]:
        row, payload, complete = item
        seq = row["change_seq"] if complete else 0
        return row["id"], remote_id, seq, field_hashes(payload, self.profile, complete=complete)

    def _answered(self) -> None:
        self._answers += 1
        if self._crash_after and self._answers >= self._crash_after:
            os._exit(70)

    def create_batch(self, items: list[tuple[dict[str, Any], dict[str, Any], bool]]) -> None:
        self.map.mark_pending([row["id"] for row, _, _ in items])
        for attempt in range(self.client.retries + 1):
            try:
                response = self.client.request("POST", "/memory/batch", idempotent=False,
                                               body={"memories": [payload for _, payload, _ in items]})
            except Uncertain as exc:
                found = self.reconcile([row["id"] for row, _, _ in items])
                self.map.record([self._created(item, found[item[0]["id"]]) for item in items
                                 if item[0]["id"] in found])
                items = [item for item in items if item[0]["id"] not in found]
                if not items:
                    return
                if attempt == self.client.retries:
                    for row, _, _ in items:
                        self.summary.fail("memory", row["id"], f"not sent: {exc}")
                    return
                self.map.mark_pending([row["id"] for row, _, _ in items])
                self.client.pause(attempt + 1)
                continue
            remote_ids = response.body.get("memory_ids") if isinstance(response.body, dict) else None
            if response.status in (200, 201) and isinstance(remote_ids, list) and len(remote_ids) == len(items):
                self.map.record([self._created(item, rid) for item, rid in zip(items, remote_ids)])
                self.advance(len(items))
                return
            break
        # Refused as a whole (one bad memory fails a batch): one at a time, to say which and why.
        self.create_singles(items)

    def create_singles(self, items: list[tuple[dict[str, Any], dict[str, Any], bool]]) -> None:
        self.map.mark_pending([row["id"] for row, _, _ in items])
        done: list[tuple[str, str, int, dict[str, str]]] = []
        refused: list[str] = []
        for item in items:
            row, payload, _ = item
            remote_id, reason = self._create_one(row["id"], payload)
            if remote_id is not None and remote_id == self._adopted.get(row["id"]):
                done.append(self._record_of(item, remote_id))
            elif remote_id is not None:
                done.append(self._created(item, remote_id))
            elif reason is not None:
                refused.append(row["id"])
                self.summary.fail("memory", row["id"], reason)
            self.advance()
        self.map.record(done)
        self.map.forget(refused)

    def _create_one(self, local_id: str, payload: dict[str, Any]) -> tuple[str | None, str | None]:
        """The server's id of the created memory, or (None, why it was refused).

        (None, None): the outcome stays unknown after every retry; the memory
        stays pending and the next push looks for it first. On localmem serve a memory
        already there under its id is taken as this one when it is the same version
        (recorded in ``_adopted``), else this one is created under a new id, said.
        """
        apart: str | None = None  # why the memory already under its id is not this one
        for attempt in range(self.client.retries + 1):
            try:
                response = self.client.request("POST", "/memory", body=payload, idempotent=False)
            except Uncertain:
                found = self.reconcile([local_id])
                if local_id in found:
                    return found[local_id], None
                self.map.mark_pending([local_id])
                self.client.pause(attempt + 1)
                continue
            body = response.body if isinstance(response.body, dict) else {}
            if response.status in (200, 201) and isinstance(body.get("memory_id"), str):
                if apart:
                    self.summary.warnings.append(
                        f"memory {local_id}: the server holds a memory under its id that no push put there and "
                        f"that is not this version ({apart}): left as it is; this one created apart, "
                        f"as {body['memory_id']}")
                return body["memory_id"], None
            message = response.message()
            if self.profile.localmem and response.status == 400 and "already exists" in message:
                found = self.reconcile([local_id])  # ours, pushed under another URL?
                if local_id in found:
                    return found[local_id], None
                apart = self._served_version(local_id, payload)
                if apart is None:
                    return local_id, None
                payload = {k: v for k, v in payload.items() if k != "id"}  # another version: not taken
                self.map.mark_pending([local_id])
                continue
            return None, f"POST /memory answered {response.status}: {message}"
        self.summary.fail("memory", local_id, "no answer from the server; the next push looks for it first")
        return None, None

    def _served_version(self, local_id: str, payload: dict[str, Any]) -> str | None:
        """On localmem serve, ``local_id`` is taken by a memory no push of it put there (another client stored it,
        or a sync brought it): None when it is the same version (taken as this one, in ``_adopted``), else why it
        is not. One ``GET`` per such create."""
        response = self.client.get(f"/memory/{self.client.quoted(local_id)}")
        memory = response.body.get("memory") if response.ok and isinstance(response.body, dict) else None
        if not isinstance(memory, dict) or memory.get("id") != local_id:
            return f"GET /memory/{local_id} answered {response.status} without it"
        if self.map.is_mapped(local_id):
            return "another memory of this store is recorded as it"
        differs = served_differences(memory, payload)
        if differs:
            return f"it differs in {', '.join(differs)}"
        self._note_adopted(local_id, local_id)
        return None

    def update_memories(self) -> None:
        self.phase("updating", self.map.counts()["to_update"])
        for page in self.map.pages("push_to_update"):
            ids = self._references(page)
            records = []
            lost = []
            for row in page:
                record = self._update_one(row, ids)
                if record == "lost":
                    lost.append(row["id"])
                elif record is not None:
                    records.append(record)
                self.advance()
            self.map.record(records)
            self.map.forget(lost, with_edges=True)

    def _update_one(self, row: dict[str, Any], ids: dict[str, str]) -> Any:
        with_embedding = self.carry and self.profile.localmem  # AutoMem's PATCH takes no embedding
        payload, complete = memory_payload(row, self.profile, ids, with_embedding=with_embedding)
        hashes = field_hashes(payload, self.profile, complete=complete)
        sent = json.loads(row["pushed_fields"] or "{}")
        changed = [name for name in self.profile.fields if hashes[name] != sent.get(name)]
        seq = row["change_seq"] if complete else 0
        if not changed:
            self.summary.memories.unchanged += 1
            return row["id"], row["remote_id"], seq, hashes
        body = {name: payload[name] for name in changed}
        body["updated_at"] = payload["updated_at"]
        if "content" in changed:
            if "embedding" in payload:
                body["embedding"] = payload["embedding"]
                self.summary.embeddings["sent"] += 1
            elif self.profile.vector_size is not None:
                self.summary.embeddings["server_embedded"] += 1
        path = f"/memory/{self.client.quoted(row['remote_id'])}"
        if not self.profile.localmem and ("tags" in body or "metadata" in body):
            current = self.enrichment.current(row["id"], path, self.client.get(path))
            if current.ok and isinstance(current.body, dict) and isinstance(current.body.get("memory"), dict):
                body = merge_server_additions(body, current.body["memory"])
            elif current.status == 404:
                return self._lost(row)
        response = self.client.request("PATCH", path, body=body)
        if response.ok:
            self.summary.memories.updated += 1
            self.map.changed_there([row["remote_id"]])
            return row["id"], row["remote_id"], seq, hashes
        if response.status == 404:
            return self._lost(row)
        self.summary.fail("memory", row["id"], f"PATCH answered {response.status}: {response.message()}")
        return None

    def _lost(self, row: dict[str, Any]) -> str:
        self.summary.warnings.append(f"memory {row['id']} was gone from the server "
                                     f"({row['remote_id']}); it is created again")
        return "lost"

def _usable_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _snapshot_problem(nodes: Any) -> str | None:
    """What is wrong with a ``/graph/snapshot`` answer's ``nodes`` (None: a list of memories
    with string ids, which is what the look-up reads)."""
    if not isinstance(nodes, list):
        return f"answered 'nodes' as {type(nodes).__name__}, not a list"
    for index, node in enumerate(nodes):
        if not isinstance(node, dict) or not _usable_id(node.get("id")):
            return f"answered nodes[{index}] without a string 'id'"
    return None


def _marker(memory: dict[str, Any]) -> str | None:
    metadata = memory.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return None
    value = metadata.get(MARKER) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None
