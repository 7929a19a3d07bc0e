"""The MCP tools that write: ``store_memory`` (one memory or a batch), ``update_memory``
and ``delete_memory``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..privacy import redact_item, redact_update
from ..tags import read_tag_field
from ..validation import HIDING_FIELDS, batch_not_current, not_current_note
from . import formatting, store_answers
from .tool_arguments import _clean_tags, _present
from .tool_output import StoreGetter, ToolError, ToolOutput, _content_too_large, _no_such_memory, _with_warnings
from .tools import (BATCH_DISALLOWED_FIELDS, BATCH_ITEM_FIELDS, BATCH_MAX_ITEMS, CONTENT_HARD_LIMIT,
                    CONTENT_SOFT_LIMIT, ENUMERATION_MAX_LIMIT, STORE_SINGLE_FIELDS, UPDATE_FIELDS)


# -- store_memory -------------------------------------------------------------------------


def _switch(args: Mapping[str, Any], name: str = "dedup", tool: str = "store_memory") -> bool:
    """A write tool's switch that is on unless given false (``dedup``, ``redact``)."""
    value = args.get(name)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ToolError(f"{tool}: `{name}` must be a boolean (true or false)")
    return value


def store_memory(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    dedup = _switch(args)
    redacting = _switch(args, "redact")  # on unless asked (docs/privacy.md)
    if args.get("memories") is not None:
        return _store_batch(get_store, args, dedup, redacting)
    content = args.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ToolError("store_memory: `content` is required (or pass `memories` for batch mode)")
    if len(content) > CONTENT_HARD_LIMIT:
        raise _content_too_large(len(content))
    supersedes = (args.get("supersedes_memory_id") or "").strip() if isinstance(
        args.get("supersedes_memory_id"), str) else ""
    if not supersedes and (_present(args.get("supersede_relation")) or _present(args.get("supersede_reason"))):
        raise ToolError("store_memory: `supersede_relation` and `supersede_reason` need `supersedes_memory_id`")
    fields = {k: args[k] for k in STORE_SINGLE_FIELDS
              if k not in ("content", "supersedes_memory_id", "supersede_relation", "supersede_reason")
              and args.get(k) is not None}
    notes = read_tag_field(fields)
    if redacting:  # before either path writes: supersede stores the new content too
        try:
            redacted = redact_item({**fields, "content": content})
        except ValidationError as exc:
            raise ToolError(f"store_memory: {exc.message}") from exc
        content = redacted.pop("content")
        fields = redacted
        if "redacted" in (fields.get("metadata") or {}):
            notes.append(f"redacted before storing: {fields['metadata']['redacted']['kinds']}")
    store = get_store()
    out: dict[str, Any] = {}
    if supersedes:
        relation = args.get("supersede_relation") or "INVALIDATED_BY"
        # Always pass a field so supersede() stores `content` even when it looks like a memory id.
        fields.setdefault("tags", [])
        try:
            result = store.supersede(supersedes, content, relation=relation,
                                     reason=args.get("supersede_reason") or None, **fields)
        except NotFoundError as exc:
            raise ToolError(f"store_memory: superseded memory not found: {supersedes}",
                            kind="not_found", code=404) from exc
        memory_id = result["memory_id"]
        out.update({"memory_id": memory_id, "superseded_memory_id": result["superseded_memory_id"],
                    "association_created": bool(result.get("association_created")),
                    "relation_type": result.get("relation_type", relation), "deduped": False})
        if args.get("dedup") is True:
            notes.append("`dedup` does not apply in supersede mode: the new memory was stored")
    else:
        checked = store.store_checked(content, dedup=dedup, **fields)
        memory_id = checked["id"]
        out.update(memory_id=memory_id, deduped=checked["deduped"], similar_existing=checked["similar_existing"])
        if checked.get("not_applied"):
            out["not_applied"] = checked["not_applied"]
    try:
        record = store.get(memory_id)
        out["type"] = record.get("type")
        out["confidence"] = record.get("confidence")
        hidden = None if out.get("deduped") else not_current_note(record, store.now())
        notes += [hidden] if hidden else []
    except LocalMemError:  # pragma: no cover - just stored
        pass
    if out.get("deduped"):
        out["message"] = "Memory already stored (deduplicated): nothing new was written"
        text = store_answers.deduped_text(memory_id, out.get("not_applied") or [])
    else:
        out["message"] = "Memory stored successfully"
        text = f"Memory stored successfully!\n\nMemory ID: {memory_id}"
    text += store_answers.similar_lines(out.get("similar_existing") or [])
    if out.get("superseded_memory_id"):
        text += (f"\nSuperseded memory ID: {out['superseded_memory_id']}"
                 f"\nAssociation created: {'yes' if out['association_created'] else 'no'}"
                 f" ({out['superseded_memory_id']} -[{out['relation_type']}]-> {memory_id})")
    if out.get("type"):
        text += f"\nType: {out['type']} (confidence {formatting.fixed3(out.get('confidence') or 0)})"
    text += f"\nMessage: {out['message']}"
    if len(content) > CONTENT_SOFT_LIMIT:
        out["content_length"] = len(content)
        out["size_warning"] = True
        text += (f"\n📝 Content length ({len(content)} chars) exceeds recommended size ({CONTENT_SOFT_LIMIT}). "
                 "Consider shorter, focused memories.")
    return _with_warnings(ToolOutput([text], {k: v for k, v in out.items() if v is not None}), notes)


def _store_batch(get_store: StoreGetter, args: Mapping[str, Any], dedup: bool, redacting: bool) -> ToolOutput:
    conflicting = [f for f in STORE_SINGLE_FIELDS if args.get(f) is not None]
    if conflicting:
        raise ToolError("store_memory: batch mode accepts per-item fields inside `memories` only. Remove "
                        f"top-level single-mode field(s): {', '.join(conflicting)}.")
    memories = args.get("memories")
    if not isinstance(memories, list) or not memories:
        raise ToolError("store_memory: `memories` array must contain at least one item")
    if len(memories) > BATCH_MAX_ITEMS:
        raise ToolError(f"store_memory: `memories` array exceeds max {BATCH_MAX_ITEMS} items (got {len(memories)})")
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    for index, item in enumerate(memories):
        if not isinstance(item, Mapping):
            raise ToolError(f"store_memory: memories[{index}] must be an object")
        for name in BATCH_DISALLOWED_FIELDS:
            if item.get(name) is not None:
                raise ToolError(f"store_memory: memories[{index}].{name} is not allowed in batch mode "
                                f"(use single-store mode for {name})")
        unknown = sorted(set(item) - set(BATCH_ITEM_FIELDS))
        if unknown:
            raise ToolError(f"store_memory: memories[{index}] has unknown field(s): {', '.join(unknown)} "
                            f"(allowed: {', '.join(BATCH_ITEM_FIELDS)})")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"store_memory: memories[{index}].content is required")
        if len(content) > CONTENT_HARD_LIMIT:
            error = _content_too_large(len(content), f" (memories[{index}])")
            assert error.structured is not None
            error.structured["index"] = index
            raise error
        items.append({k: v for k, v in item.items() if v is not None})
        notes.extend(read_tag_field(items[-1], where=f"memories[{index}]: "))
    store = get_store()
    # Embedded before the store's lock is taken: other calls' recalls go on while the model runs.
    results = store.store_many_checked(store.prepare_many(items, redact=redacting), dedup=dedup)
    text, out = store_answers.batch_answer(results, dedup)
    notes.extend(batch_not_current([(f"memories[{i}]: ", store.get(r["id"])) for i, r in enumerate(results)
                                    if not r["deduped"] and any(k in items[i] for k in HIDING_FIELDS)],
                                   store.now()))
    return _with_warnings(ToolOutput([text], out), notes)


# -- update / delete -------------------------------------------------------------------------


def update_memory(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    memory_id = args.get("memory_id")
    memory_id = memory_id.strip() if isinstance(memory_id, str) else ""
    if not memory_id:
        raise ToolError("update_memory: memory_id is required")
    fields = {k: args[k] for k in UPDATE_FIELDS if k in args and (args[k] is not None or k == "t_invalid")}
    if not fields:
        raise ToolError(f"update_memory: nothing to update; pass at least one of {', '.join(UPDATE_FIELDS)}")
    notes = read_tag_field(fields)
    try:  # on unless asked, as for store_memory (docs/privacy.md)
        fields, found = redact_update(fields, _switch(args, "redact", "update_memory"))
    except ValidationError as exc:
        raise ToolError(f"update_memory: {exc.message}") from exc
    if found:
        notes.append(f"redacted before storing: {dict(sorted(found.items()))}")
    try:
        record = get_store().update(memory_id, **fields)
    except NotFoundError:
        raise _no_such_memory("update_memory", memory_id) from None
    hidden = not_current_note(record, get_store().now())
    notes += [hidden] if hidden else []
    message = f"Memory {record['id']} updated successfully!"
    return _with_warnings(ToolOutput([message], {"memory_id": record["id"], "updated_fields": sorted(fields),
                                                 "message": message}), notes)


def delete_memory(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    notes: list[str] = []
    tags = _clean_tags(args.get("tags"), notes)
    memory_id = args.get("memory_id")
    memory_id = memory_id.strip() if isinstance(memory_id, str) else ""
    if tags and memory_id:
        raise ToolError("delete_memory: pass either `memory_id` (single) or `tags` (bulk-by-tag), not both")
    if not tags and not memory_id:
        raise ToolError("delete_memory: `memory_id` or `tags` is required")
    if tags and notes:  # a delete does not guess: "project alpha" would delete 'project' and 'alpha'
        raise ToolError(f"delete_memory: {notes[0]}; nothing was deleted: give each tag as it is stored, "
                        "one list item each")
    store = get_store()
    if memory_id:
        try:
            store.delete(memory_id)
        except NotFoundError:
            raise _no_such_memory("delete_memory", memory_id) from None
        message = f"Memory {memory_id} deleted successfully!"
        return ToolOutput([message], {"memory_id": memory_id, "message": message})
    # Collect every match first (exact, case-insensitive, any-of), then delete them.
    ids: list[str] = []
    offset = 0
    while True:
        page = store.by_tag(tags, limit=ENUMERATION_MAX_LIMIT, offset=offset)
        ids.extend(m["id"] for m in page["memories"])
        if not page["has_more"]:
            break
        offset = page["next_offset"]
    deleted = 0
    for mid in dict.fromkeys(ids):
        try:
            store.delete(mid)
        except NotFoundError:  # removed meanwhile by another caller
            continue
        deleted += 1
    noun = "memory" if deleted == 1 else "memories"
    message = f"Deleted {deleted} {noun} matching tag(s) {', '.join(tags)}"
    text = f"Bulk delete complete: removed {deleted} {noun} matching tag(s) {', '.join(tags)}."
    return _with_warnings(ToolOutput([text], {"deleted_count": deleted, "tags": tags, "message": message}), notes)
