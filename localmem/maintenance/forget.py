"""``localmem forget``: delete memories so that their text is nowhere in the database files.

A plain delete leaves the text behind: in free pages of the file, in older
frames of the ``-wal``, and in the FTS5 index's segments (a contentless index
only marks a row deleted until its segments are merged). ``forget`` deletes
with ``PRAGMA secure_delete`` on (freed space is zeroed), then ``scrub``s:
the full-text index is merged (``optimize``: the deleted rows' terms go), the
file is rebuilt (``VACUUM``: no free page keeps anything) and the WAL is
checkpointed and truncated to nothing. The -shm holds only the WAL's index.

The purge is recorded (``storage.purges.record_purged``: ids and time, no
content), the sync tombstone is marked purged (the next sync purges every peer's copy, as
``trash.purge`` does) and any trash copy is dropped, and the next ``localmem push`` deletes each memory on the
AutoMem server it was pushed to. Backups and exports made before are listed
(``copies.list_copies``): they still hold the text.
"""

from __future__ import annotations

import itertools
import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import apsw

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..privacy import find_secrets, redact
from ..storage.database import transaction
from ..storage.purges import record_purged
from ..text import visible
from ..timeparse import format_timestamp
from ..validation import validate_uuid
from .copies import list_copies

if TYPE_CHECKING:
    from ..store import MemoryStore

PAGE = 500  # memories read per statement while searching
MAX_TARGETS = 100_000  # memories one forget may select (a larger purge is run again)
MAX_NEEDLE = 10_000
PREVIEW = 80


def _preview(content: str) -> str:
    """A short, redacted preview (a dry run must not print the credential it found)."""
    text = visible(" ".join(redact(content).text.split()))
    return text if len(text) <= PREVIEW else text[:PREVIEW - 1] + "…"


@contextmanager
def secure_deletes(conn: apsw.Connection) -> Iterator[None]:
    """``PRAGMA secure_delete`` on for the block (freed space is zeroed), as it was after."""
    previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(previous)}")


def scan_memories(store: "MemoryStore", statement: str = "forget_page",
                  **params: Any) -> Iterator[tuple[Any, ...]]:
    """Every memory row a paged statement selects, a page at a time, each page under the lock."""
    after = 0
    while True:
        with store.lock:
            rows = list(store.conn.execute(store.sql[statement], {**params, "after": after, "limit": PAGE}))
        yield from rows
        if len(rows) < PAGE:
            return
        after = rows[-1][0]


def select_targets(store: "MemoryStore", *, ids: Iterable[str] = (), matching: str | None = None,
                   secrets: bool = False, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The memories to forget: the given ids, those whose content or metadata contains
    ``matching`` (case-insensitive), and (``secrets``) those where the detector finds a
    credential (of ``kinds``, when given). Each ``{"id", "reason", "preview"}``."""
    wanted_kinds = set(kinds)
    if not (ids or matching or secrets):
        raise ValidationError("forget: give memory ids, --matching TEXT or --secrets")
    found: dict[str, dict[str, Any]] = {}
    for memory_id in ids:
        memory_id = validate_uuid(memory_id, "memory_id")
        found[memory_id] = _by_id(store, memory_id)
    if found:
        _add_conflict_copies(store, [t["id"] for t in found.values()], found)
    if matching is not None:
        if not isinstance(matching, str) or not matching.strip() or len(matching) > MAX_NEEDLE or "\x00" in matching:
            raise ValidationError(f"forget: --matching must be 1 to {MAX_NEEDLE} characters of text")
        for _, memory_id, content, _ in scan_memories(store, "forget_matching", needle=matching):
            found.setdefault(memory_id, {"id": memory_id, "reason": "matching", "preview": _preview(content)})
            _check_size(found)
        needle = matching.lower()
        for memory_id, content, metadata in trash_rows(store):
            if needle in content.lower() or needle in metadata.lower():
                found.setdefault(memory_id, {"id": memory_id, "reason": "matching (in the trash)",
                                             "preview": _preview(content)})
                _check_size(found)
    if secrets:
        rows = ((row[1], row[2], row[3], "secrets") for row in scan_memories(store))
        in_trash = ((row[0], row[1], row[2], "secrets (in the trash)") for row in trash_rows(store))
        for memory_id, content, metadata, reason in itertools.chain(rows, in_trash):
            kinds_here = secret_kinds(content, metadata)
            if wanted_kinds:
                kinds_here = {k: n for k, n in kinds_here.items() if k in wanted_kinds}
            if kinds_here:
                found.setdefault(memory_id, {"id": memory_id, "reason": reason, "preview": _preview(content),
                                             "kinds": kinds_here})
                _check_size(found)
    return list(found.values())


def _by_id(store: "MemoryStore", memory_id: str) -> dict[str, Any]:
    """The target an id names: held here, in the trash, or deleted here while a peer's trash may
    still hold it (its sync tombstone, not yet purged: forgetting it marks the tombstone purged,
    and the next syncs drop the peers' copies). Raises ``NotFoundError`` for none of these."""
    with store.lock:
        trashed = store.conn.execute(store.sql["trash_get"], {"id": memory_id}).fetchone()
        if trashed:
            return {"id": memory_id, "reason": "id (in the trash)", "preview": _preview(_trashed(trashed[1])[0])}
        try:
            content = store.get(memory_id)["content"]
        except NotFoundError:
            if not _deleted_here(store, memory_id):
                raise
            return {"id": memory_id, "reason": "id (deleted here; the next syncs drop the peers' copies)",
                    "preview": ""}
    return {"id": memory_id, "reason": "id", "preview": _preview(content)}


def _deleted_here(store: "MemoryStore", memory_id: str) -> bool:
    return store.conn.execute(store.sql["forget_tombstone_unpurged"], {"id": memory_id}).fetchone() is not None


def _add_conflict_copies(store: "MemoryStore", memory_ids: list[str], found: dict[str, dict[str, Any]]) -> None:
    """Add the conflict copies of ``memory_ids`` (their earlier versions a sync or a pull kept as
    memories of their own), held or in the trash, in one scan of each: forgetting a memory forgets
    every version of it."""
    ids = json.dumps(memory_ids)
    for _, copy_id, content, of in scan_memories(store, "forget_conflict_copies", ids=ids):
        found.setdefault(copy_id, {"id": copy_id, "reason": f"conflict copy of {of[:8]}", "preview": _preview(content)})
        _check_size(found)
    for copy_id, text, of in scan_memories(store, "forget_trash_conflict_copies", ids=ids):
        found.setdefault(copy_id, {"id": copy_id, "reason": f"conflict copy of {of[:8]} (in the trash)",
                                   "preview": _preview(_trashed(text)[0])})
        _check_size(found)


def trash_rows(store: "MemoryStore") -> Iterator[tuple[str, str, str]]:
    """(id, content, metadata as JSON text) of every memory in the trash, a page at a time."""
    for memory_id, text in scan_memories(store, "forget_trash_page"):
        yield (memory_id, *_trashed(text))


def _trashed(text: str) -> tuple[str, str]:
    """(content, metadata as JSON text) of a trash entry's record."""
    try:
        record = json.loads(text)
    except ValueError:
        record = {}
    record = record if isinstance(record, dict) else {}
    return str(record.get("content") or ""), json.dumps(record.get("metadata") or {}, ensure_ascii=False)


def secret_kinds(content: str, metadata_json: str | None) -> dict[str, int]:
    """What the detector finds in a memory's content and metadata, by kind."""
    kinds = dict(find_secrets(content))
    for kind, count in find_secrets(metadata_json or "").items():
        kinds[kind] = kinds.get(kind, 0) + count
    return kinds


def _check_size(found: dict[str, Any]) -> None:
    if len(found) > MAX_TARGETS:
        raise ValidationError(f"forget: more than {MAX_TARGETS} memories match; narrow the selection")


def forget(store: "MemoryStore", ids: list[str], *, dry_run: bool = False) -> dict[str, Any]:
    """Delete ``ids`` without a trace (module docstring); ``dry_run`` changes nothing.

    Returns ``{"forgotten", "ids", "scrub", "copies", "push"}``: the memories deleted, what
    the scrub did, the backups/exports made before (they still hold the text) and what
    the next push will delete on AutoMem.
    """
    if store.read_only:
        raise LocalMemError("forget needs a writable store (this one was opened read-only)")
    with store.lock:
        copies = list_copies(store.conn, store.sql)
        pushed = _pushed(store, ids)
        if dry_run:
            return {"dry_run": True, "forgotten": 0, "would_forget": len(ids), "ids": ids,
                    "copies": copies, "push": pushed}
        done: list[str] = []
        if not ids:
            return {"dry_run": False, "forgotten": 0, "ids": [], "scrub": None, "copies": copies, "push": pushed}
        with secure_deletes(store.conn):
            for memory_id in ids:
                try:
                    store.delete(memory_id)
                except NotFoundError:
                    trashed = store.conn.execute(store.sql["trash_get"], {"id": memory_id}).fetchone()
                    if not (trashed or _deleted_here(store, memory_id)):
                        continue  # gone meanwhile: nothing of it to forget
                done.append(memory_id)  # deleted, only in the trash, or deleted here: marked purged below
            with transaction(store.conn):
                record_purged(store.conn, store.sql, done, format_timestamp(store.now()))
                for memory_id in done:  # the tombstone's purge mark travels with sync; no trash copy stays
                    store.conn.execute(store.sql["sync_tombstone_purged"], {"id": memory_id})
                    store.conn.execute(store.sql["trash_remove"], {"id": memory_id})
        report = scrub(store)
    return {"dry_run": False, "forgotten": len(done), "ids": done, "scrub": report, "copies": copies,
            "push": pushed}


def _pushed(store: "MemoryStore", ids: list[str]) -> list[dict[str, Any]]:
    """Per push remote, how many of ``ids`` it holds (the next push deletes them there)."""
    rows = store.conn.execute(store.sql["forget_pushed"], {"ids": json.dumps(ids)})
    return [{"remote": remote, "memories": count} for remote, count in rows]


def scrub(store: "MemoryStore") -> dict[str, Any]:
    """Leave nothing of deleted text in the files: merge the FTS5 index, rebuild the file,
    checkpoint and truncate the WAL. Held under the store's lock; O(file size)."""
    with store.lock:
        conn = store.conn
        with secure_deletes(conn):
            with transaction(conn):
                conn.execute(store.sql["forget_fts_optimize"])
            conn.execute("VACUUM")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    report: dict[str, Any] = {"fts_merged": True, "vacuumed": True, "wal_truncated": not busy}
    if busy:
        report["warning"] = ("another connection is reading this database, so the WAL could not be "
                             "truncated: it may still hold the text until that process stops and a "
                             "checkpoint runs ('localmem forget' again, or stop the server first)")
    return report
