"""Dedup on write: the current exact duplicate of a memory about to be stored, and its
near-duplicates (docs/dedup.md).

An exact duplicate has the same key (storage/dedup_keys.py: normalised content, context,
tag set, and a turn's thread and time) and is current by recall's rules (recall/state.py:
not archived, valid now, not expired, not superseded). The caller looks it up inside its
write transaction, so two writers cannot both miss it.

A near-duplicate is a current memory of the same context whose cosine to the new text is
at least ``SIMILAR_THRESHOLD``, among the ``SIMILAR_POOL`` nearest memories of the whole
store (one kNN on the vector index); it is reported, never refused.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

from ..storage.dedup_keys import row_key
from ..storage.records import MemoryRow, rows_as_dicts, to_record
from .state import active_replacements, state_reason

if TYPE_CHECKING:
    from ..storage.backend import Backend

# Measured with all-MiniLM-L6-v2 on LoCoMo dev (benchmarks/quality/dedup_threshold.py, docs/results/history.md).
SIMILAR_THRESHOLD = 0.93
SIMILAR_LIMIT = 3
SIMILAR_POOL = 16
# The fields that make the key: equal by construction when a write is deduped.
SCOPE_FIELDS = frozenset({"content", "context", "tags"})
# Given on a deduped write and different from the kept memory: reported as not applied.
COMPARED_FIELDS = ("id", "summary", "type", "confidence", "importance", "timestamp", "updated_at",
                   "last_accessed", "t_valid", "t_invalid", "archived", "metadata",
                   "relevance_score", "embedding")


def would_be_current(row: MemoryRow, now_iso: str) -> bool:
    """Whether the new memory itself would be current: only such a write is deduped (an
    archived, expired or future-dated write is history being recorded, stored as given)."""
    return state_reason({"archived": row.archived, "t_valid": row.t_valid,
                         "t_invalid": row.t_invalid}, now_iso) is None


def current_copy(backend: "Backend", key: bytes, now_iso: str) -> dict[str, Any] | None:
    """The oldest current memory holding ``key``, as a record; None when there is none.
    Call it inside the write transaction that stores the new memory."""
    copies = [to_record(r) for r in rows_as_dicts(backend.conn.execute(backend.sql["dedup_copies"],
                                                                       {"key": key}))]
    copies = [c for c in copies if state_reason(c, now_iso) is None]
    if not copies:
        return None
    replaced = active_replacements(backend, [c["id"] for c in copies], now_iso)
    return next((c for c in copies if c["id"] not in replaced), None)


def not_applied(given: Mapping[str, Any], row: MemoryRow, kept: Mapping[str, Any]) -> list[str]:
    """The fields the write gave that differ from the memory kept in its place."""
    names = []
    for name in COMPARED_FIELDS:
        if given.get(name) is None:
            continue
        if name == "embedding":
            names.append(name)  # a given vector is never written on a deduped write
        elif getattr(row, name) != kept.get(name):
            names.append(name)
    return names


def similar_existing(backend: "Backend", vector: bytes | None, context: str, now_iso: str,
                     *, threshold: float = SIMILAR_THRESHOLD,
                     limit: int = SIMILAR_LIMIT) -> list[dict[str, Any]] | None:
    """Up to ``limit`` current memories of ``context`` with cosine ≥ ``threshold`` to
    ``vector``, best first, as ``{"id", "score"}``; None when no check could run (no
    vector, or the code index cannot answer on this connection now)."""
    if vector is None or not backend.has_vector_index:
        return None
    knn = backend.vector_knn(vector, SIMILAR_POOL)
    if knn is None:
        return None
    found = []
    for row in rows_as_dicts(backend.conn.execute(backend.sql["dedup_similar"], knn)):
        score = row["similarity"]
        if score is None or not math.isfinite(score) or score < threshold:
            break  # ordered by distance: the rest are further
        if row["context"] == context and state_reason(row, now_iso) is None:
            found.append({"id": row["id"], "score": round(float(score), 4)})
    if found:
        replaced = active_replacements(backend, [f["id"] for f in found], now_iso)
        found = [f for f in found if f["id"] not in replaced]
    return found[:limit]


def plan_writes(backend: "Backend", given: list[Mapping[str, Any]], rows: list[MemoryRow],
                now_iso: str) -> tuple[list[int], list[dict[str, Any]]]:
    """Inside the write transaction: which rows to insert (their indexes) and, per row, the
    answer's ``id``/``deduped`` (and ``not_applied`` for fields given that the memory kept
    does not have). A row repeating an earlier row of the batch goes the same way."""
    keep: list[int] = []
    results: list[dict[str, Any]] = []
    first_of_key: dict[bytes, int] = {}
    for index, (item, row) in enumerate(zip(given, rows)):
        result: dict[str, Any] = {"id": row.id, "deduped": False}
        kept: Mapping[str, Any] | None = None
        if would_be_current(row, now_iso):
            key = row_key(row, row.thread)
            if key in first_of_key:
                first = first_of_key[key]
                result["id"] = results[first]["id"]
                kept = current_copy(backend, key, now_iso) if results[first]["deduped"] \
                    else rows[first].__dict__
            else:
                first_of_key[key] = index
                kept = current_copy(backend, key, now_iso)
                if kept is not None:
                    result["id"] = kept["id"]
        if kept is None:
            keep.append(index)
        else:
            result["deduped"] = True
            result["not_applied"] = not_applied(item, row, kept)
        results.append(result)
    return keep, results
