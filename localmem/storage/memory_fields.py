"""The fields a caller gives a memory, validated into the row the store writes.

``build_row`` is the whole of ``MemoryStore.store``'s validation and
defaults (AutoMem's POST /memory); ``merged_update`` is ``update``'s merge
of new fields over a stored record. The importer uses both, so an imported
line is held to exactly the API's rules.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Iterable, Mapping

from ..classify import classify, normalize_memory_type
from ..errors import ValidationError
from ..tags import normalize_tags, with_tags_read
from ..text import generate_summary
from ..timeparse import format_timestamp
from ..validation import (
    check_text,
    validate_content,
    validate_context_name,
    validate_metadata,
    validate_timestamp,
    validate_unit_interval,
    validate_uuid,
)
from .records import MemoryRow

STORE_FIELDS = frozenset({
    "content", "tags", "importance", "confidence", "type", "timestamp", "metadata",
    "embedding", "t_valid", "t_invalid", "id", "context", "updated_at", "last_accessed",
    "archived", "summary", "relevance_score",
})
UPDATE_FIELDS = STORE_FIELDS - {"id"}
CLEARABLE_FIELDS = frozenset({"t_invalid", "relevance_score"})


def validate_archived(value: Any) -> bool:
    """A boolean (or 0/1); ``bool("false")`` would silently archive."""
    if value is None:
        return False
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise ValidationError("'archived' must be a boolean")


def build_rows(items: list[Mapping[str, Any]], *, now: datetime, frames: int) -> list[MemoryRow]:
    """The rows of a batch of ``store`` items: tags read by the one rule (``with_tags_read``:
    a Python warning for each change, attributed ``frames`` frames up from the caller), then
    ``build_row``; an error names the item's index when the batch has more than one."""
    rows = []
    for index, item in enumerate(items):
        try:
            item = with_tags_read(item, f"Memory at index {index}: " if len(items) > 1 else "", frames + 1)
            rows.append(build_row(item, now=now))
        except ValidationError as exc:
            if len(items) == 1:
                raise
            raise ValidationError(f"Memory at index {index}: {exc.message}") from exc
    return rows


def build_row(fields: Mapping[str, Any], *, now: datetime) -> MemoryRow:
    """A new memory's row from ``store``'s fields (``embedding`` is left to the caller).

    Unset fields get their defaults: a classified type and confidence, a
    generated summary, times from ``now``, a fresh id.
    """
    unknown = set(fields) - STORE_FIELDS
    if unknown:
        raise ValidationError(f"Unknown memory field(s): {', '.join(sorted(unknown))}")
    content = validate_content(fields.get("content"))
    tags = normalize_tags(fields.get("tags"))
    importance = validate_unit_interval(fields.get("importance"), "importance", 0.5)
    confidence = validate_unit_interval(fields.get("confidence"), "confidence", None)
    if fields.get("type") is not None:
        if not isinstance(fields["type"], str):
            raise ValidationError("'type' must be a string")
        memory_type = normalize_memory_type(fields["type"])
        confidence = 0.9 if confidence is None else confidence
    else:
        memory_type, classified = classify(content)
        confidence = classified if confidence is None else confidence
    metadata = validate_metadata(fields.get("metadata"))
    t_valid = validate_timestamp(fields.get("t_valid"), "t_valid")
    t_invalid = validate_timestamp(fields.get("t_invalid"), "t_invalid")
    timestamp = validate_timestamp(fields.get("timestamp"), "timestamp") or format_timestamp(now)
    updated_at = validate_timestamp(fields.get("updated_at"), "updated_at") or timestamp
    last_accessed = validate_timestamp(fields.get("last_accessed"), "last_accessed") or updated_at
    memory_id = fields.get("id")
    memory_id = validate_uuid(memory_id, "id") if memory_id is not None else str(uuid.uuid4())
    summary = fields.get("summary")
    if summary is not None:
        if not isinstance(summary, str):
            raise ValidationError("'summary' must be a string")
        summary = check_text(summary, "summary")
    relevance = fields.get("relevance_score")
    if relevance is not None:
        relevance = validate_unit_interval(relevance, "relevance_score", None)
    return MemoryRow(
        id=memory_id,
        content=content,
        summary=summary if summary is not None else generate_summary(content),
        type=memory_type,
        confidence=float(confidence),
        importance=float(importance),
        tags=tags,
        timestamp=timestamp,
        updated_at=updated_at,
        last_accessed=last_accessed,
        t_valid=t_valid or timestamp,
        t_invalid=t_invalid,
        archived=validate_archived(fields.get("archived")),
        metadata=metadata,
        context=validate_context_name(fields.get("context")),
        relevance_score=relevance,
    )


def merged_update(current: dict[str, Any], fields: dict[str, Any], *,
                  now: datetime) -> tuple[MemoryRow, bool]:
    """The row ``update`` writes over the record ``current``, and whether the content changes.

    ``updated_at`` becomes ``now`` unless ``fields`` set it; a changed content
    without a new summary gets a generated one.
    """
    merged: dict[str, Any] = {k: current[k] for k in STORE_FIELDS - {"embedding"} if k in current}
    content_changed = "content" in fields and validate_content(fields["content"]) != current["content"]
    if content_changed and "summary" not in fields:
        merged.pop("summary")  # regenerated from the new content
    if "type" not in fields and "confidence" in fields:
        merged["type"] = current["type"]
    merged.update({k: v for k, v in fields.items() if k != "embedding"})
    if "updated_at" not in fields:
        merged["updated_at"] = now
    return build_row(merged, now=now), content_changed


def memory_list(items: Any) -> list[Mapping[str, Any]]:
    """``store_many``'s items as a list, each an object (the error names the first that is not)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise ValidationError("'items' must be a list of memory objects")
    items = list(items)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValidationError(f"Memory at index {index} must be an object")
    return items
