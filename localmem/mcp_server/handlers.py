"""What each MCP tool does, against a ``MemoryStore``, without the SDK.

:func:`call_tool` validates the arguments (the tool's JSON input schema, then
the mode rules of ``mcp-automem``), runs the tool and returns a
:class:`ToolOutput` — text blocks, a ``structuredContent`` object and
``is_error``. Every failure (bad arguments, ``ValidationError``,
``NotFoundError``, a store that cannot open, anything unexpected) becomes an
``is_error`` output with a clear message; nothing raises.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from ..privacy import redact_item
from ..relations import supersession_meaning
from ..tags import parse_tags, read_tag_field
from . import formatting, store_answers
from .tools import (
    ASSOCIATION_FIELDS,
    ASSOCIATION_PROPERTY_SCHEMAS,
    BATCH_DISALLOWED_FIELDS,
    BATCH_ITEM_FIELDS,
    BATCH_MAX_ITEMS,
    CONTENT_HARD_LIMIT,
    CONTENT_SOFT_LIMIT,
    ENUMERATION_MAX_LIMIT,
    STORE_SINGLE_FIELDS,
    TOOLS_BY_NAME,
    UPDATE_FIELDS,
)
from .recall_tool import RANKED_ONLY_PARAMS

if TYPE_CHECKING:
    from ..store import MemoryStore

log = logging.getLogger("localmem.mcp")

StoreGetter = Callable[[], "MemoryStore"]


@dataclass
class ToolOutput:
    """One tool result: text content blocks, structuredContent, and the error flag."""

    texts: list[str]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class ToolError(Exception):
    """A tool failure reported to the caller as an ``isError`` result."""

    def __init__(self, message: str, *, kind: str = "validation_error", code: int = 400,
                 structured: dict[str, Any] | None = None, text: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.code = code
        self.structured = structured
        self.text = text

    def output(self) -> ToolOutput:
        structured = self.structured or {
            "error": self.kind, "status": "error", "code": self.code, "message": self.message}
        return ToolOutput([self.text or f"Error: {self.message}"], structured, is_error=True)


# -- argument checks ------------------------------------------------------------------


_validators: dict[str, Any] = {}


def _schema_validator(name: str) -> Any:
    if name not in _validators:
        try:
            from jsonschema import Draft202012Validator
        except ImportError:  # the mcp extra brings jsonschema; without it only the mode rules apply
            _validators[name] = None
        else:
            schema = TOOLS_BY_NAME[name]["inputSchema"]
            _validators[name] = Draft202012Validator(schema)
    return _validators[name]


def _path_of(error: Any) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path]
    text = ""
    for part in parts:
        text += part if part.startswith("[") else (f".{part}" if text else part)
    return text


def check_arguments(name: str, args: Mapping[str, Any]) -> None:
    """Validate ``args`` against the tool's input schema; ToolError naming the first problem."""
    validator = _schema_validator(name)
    if validator is None:
        allowed = set(TOOLS_BY_NAME[name]["inputSchema"]["properties"])
        unknown = sorted(set(args) - allowed)
        if unknown:
            raise ToolError(f"{name}: unknown argument(s): {', '.join(unknown)}")
        return
    errors = sorted(validator.iter_errors(dict(args)), key=lambda e: (len(e.absolute_path), str(e.message)))
    if not errors:
        return
    error = errors[0]
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, Mapping) else []
        where = _path_of(error)
        raise ToolError(f"{name}: unknown argument(s){f' in {where}' if where else ''}: {', '.join(extra)} "
                        f"(allowed: {', '.join(allowed)})")
    where = _path_of(error)
    raise ToolError(f"{name}: invalid argument{f' {where!r}' if where else 's'}: {error.message}")


def _present(value: Any) -> bool:
    """Whether an optional argument was really given (None and [] count as absent)."""
    return value is not None and not (isinstance(value, (list, tuple)) and not value)


def _clean_tags(tags: Any, notes: list[str] | None = None) -> list[str]:
    """Tags read as every tag input is (tags.parse_tags); what was split or changed goes to ``notes``."""
    if not isinstance(tags, (list, str)):
        return []
    parsed = parse_tags([t for t in tags if isinstance(t, str)] if isinstance(tags, list) else tags)
    if notes is not None:
        notes.extend(parsed.notes)
    return parsed.tags


def _with_warnings(output: ToolOutput, notes: list[str]) -> ToolOutput:
    """``output`` with ``notes`` in its text and as structured ``warnings``."""
    if not notes:
        return output
    output.texts[0] += _warning_lines({"warnings": notes})
    output.structured = {**(output.structured or {}), "warnings": notes}
    return output


def _content_too_large(length: int, where: str = "") -> ToolError:
    message = f"Content exceeds maximum allowed length of {CONTENT_HARD_LIMIT} characters"
    text = (f"❌ Memory rejected{where}: Content length ({length} chars) exceeds hard limit "
            f"({CONTENT_HARD_LIMIT} chars).\n\nPlease split into smaller, focused memories or summarize the "
            "content before storing.")
    structured = {"error": "content_too_large", "content_length": length,
                  "hard_limit": CONTENT_HARD_LIMIT, "message": message}
    return ToolError(message, kind="content_too_large", structured=structured, text=text)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _no_such_memory(tool: str, memory_id: str) -> ToolError:
    """An unknown id is an error that names it, in every tool (never an empty success)."""
    return ToolError(f"{tool}: no memory with id {memory_id}", kind="not_found", code=404)


def _warning_lines(result: Mapping[str, Any]) -> str:
    return "".join(f"\n⚠️ Warning: {w}" for w in result.get("warnings", ()))


# -- store_memory -------------------------------------------------------------------------


def _switch(args: Mapping[str, Any], name: str = "dedup") -> bool:
    """A store_memory switch that is on unless given false (``dedup``, ``redact``)."""
    value = args.get(name)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ToolError(f"store_memory: `{name}` must be a boolean (true or false)")
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
    text, out = store_answers.batch_answer(get_store().store_many_checked(items, dedup=dedup, redact=redacting),
                                           dedup)
    return _with_warnings(ToolOutput([text], out), notes)


# -- recall_memory ----------------------------------------------------------------------------


def recall_memory(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    fmt = args.get("format") or "text"
    memory_id = args.get("memory_id")
    if isinstance(memory_id, str) and memory_id.strip():
        store = get_store()
        try:
            record = store.get(memory_id.strip())
        except NotFoundError:
            raise _no_such_memory("recall_memory", memory_id.strip()) from None
        result = formatting.id_fetch_result(record)
    elif args.get("exhaustive") is True:
        result = _enumerate(get_store, args)
    else:
        result = _ranked(get_store, args)
    try:
        response = formatting.build_recall_response(result, fmt)
    except formatting.RecallBudgetError as exc:
        raise ToolError(str(exc), kind="response_budget_exceeded", code=413) from exc
    return ToolOutput(response.texts, response.structured)


def _enumerate(get_store: StoreGetter, args: Mapping[str, Any]) -> dict[str, Any]:
    tags = _clean_tags(args.get("tags"))
    if not tags:
        raise ToolError("recall_memory: `exhaustive: true` requires non-empty `tags`")
    if args.get("tag_match") not in (None, "exact"):
        raise ToolError('recall_memory: enumeration mode (`exhaustive: true`) only supports exact tag matching; '
                        'remove `tag_match: "prefix"`')
    if args.get("tag_mode") not in (None, "any"):
        raise ToolError('recall_memory: enumeration mode (`exhaustive: true`) only supports any-of tag matching; '
                        'remove `tag_mode: "all"`')
    conflicting = [name for name in RANKED_ONLY_PARAMS if _present(args.get(name))]
    if conflicting:
        raise ToolError('recall_memory: enumeration mode (`exhaustive: true`) only accepts `tags`, `limit`, '
                        '`offset`, `tag_mode: "any"`, `tag_match: "exact"`, and `format`. Remove ranked-only '
                        f"param(s): {', '.join(conflicting)}.")
    limit = args.get("limit")
    limit = 20 if limit is None else min(int(limit), ENUMERATION_MAX_LIMIT)
    offset = int(args.get("offset") or 0)
    page = get_store().by_tag(tags, limit=limit, offset=offset)
    return formatting.enumeration_result(page)


def _ranked(get_store: StoreGetter, args: Mapping[str, Any]) -> dict[str, Any]:
    offset = args.get("offset")
    if offset is not None and int(offset) > 0:
        raise ToolError("recall_memory: `offset` is only supported in enumeration mode (`exhaustive: true`); "
                        "ranked recall does not paginate — raise `limit` instead")
    params = {k: v for k, v in args.items()
              if k not in ("format", "offset", "memory_id", "exhaustive") and v is not None}
    query = params.pop("query", None)
    response = get_store().recall(query, **params)
    return formatting.ranked_result(response)


# -- associate_memories -------------------------------------------------------------------------


def _association(item: Mapping[str, Any], label: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("memory1_id", "memory2_id"):
        value = item.get(key)
        value = value.strip() if isinstance(value, str) else ""
        if not value:
            raise ToolError(f"associate_memories: {label} {key} is required")
        out[key] = value
    if not item.get("type"):
        raise ToolError(f"associate_memories: {label} type is required")
    strength = item.get("strength")
    if isinstance(strength, bool) or not isinstance(strength, (int, float)):
        raise ToolError(f"associate_memories: {label} strength is required")
    if not 0 <= strength <= 1:
        raise ToolError(f"associate_memories: {label} strength must be between 0 and 1")
    out["type"] = item["type"]
    out["strength"] = float(strength)
    for key in ASSOCIATION_PROPERTY_SCHEMAS:
        if item.get(key) is not None:
            out[key] = item[key]
    return out


def associate_memories(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    if args.get("remove") is True:
        return _dissociate(get_store, args)
    if args.get("associations") is not None:
        return _associate_batch(get_store, args)
    association = _association(args, "single association")
    store = get_store()
    edge = store.associate(association.pop("memory1_id"), association.pop("memory2_id"),
                           association.pop("type"), association.pop("strength"), **association)
    verb = "updated" if edge.get("updated") else "created"
    message = f"Association {verb} between {edge['memory1_id']} and {edge['memory2_id']}"
    structured = {"success": True, "message": message, "relation_type": edge["relation_type"],
                  "strength": edge["strength"],
                  **{k: edge[k] for k in ("updated", "previous_strength", "warnings") if k in edge}}
    text = (f"Association {verb} successfully!\n\n{edge['memory1_id']} -[{edge['relation_type']}]-> "
            f"{edge['memory2_id']} (strength {formatting.js_number(edge['strength'])}"
            + (f", was {formatting.js_number(edge['previous_strength'])}" if edge.get("updated") else "")
            + f")\nMessage: {message}")
    meaning = supersession_meaning(edge["relation_type"], edge["memory1_id"], edge["memory2_id"])
    if meaning:
        text += f"\nMeaning: {meaning}"
    return ToolOutput([text + _warning_lines(edge)], structured)


def _dissociate(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    """``remove: true``: delete memory1 -[type]-> memory2 (every type when ``type`` is omitted)."""
    extra = [k for k in ("associations", "strength", *ASSOCIATION_PROPERTY_SCHEMAS) if args.get(k) is not None]
    if extra:
        raise ToolError(f"associate_memories: `remove: true` takes memory1_id, memory2_id and an optional "
                        f"type only; remove {', '.join(extra)}")
    ids = []
    for key in ("memory1_id", "memory2_id"):
        value = args.get(key)
        value = value.strip() if isinstance(value, str) else ""
        if not value:
            raise ToolError(f"associate_memories: {key} is required")
        ids.append(value)
    result = get_store().dissociate(ids[0], ids[1], args.get("type"))
    count = result["removed"]
    message = (f"Removed {count} association{'' if count == 1 else 's'} from {result['memory1_id']} "
               f"to {result['memory2_id']}")
    structured = {"success": True, "message": message, "removed": count,
                  "removed_types": result["removed_types"],
                  **({"relation_type": result["relation_type"]} if result["relation_type"] else {}),
                  **({"warnings": result["warnings"]} if "warnings" in result else {})}
    text = f"{message} ({', '.join(result['removed_types'])})."
    return ToolOutput([text + _warning_lines(result)], structured)


def _associate_batch(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    conflicting = [f for f in ASSOCIATION_FIELDS if args.get(f) is not None]
    if conflicting:
        raise ToolError("associate_memories: `associations` batch mode cannot be combined with "
                        f"single-association fields. Remove top-level single-mode field(s): {', '.join(conflicting)}")
    associations = args.get("associations")
    if not isinstance(associations, list) or not associations:
        raise ToolError("associate_memories: `associations` must contain at least one item")
    if len(associations) > BATCH_MAX_ITEMS:
        raise ToolError(f"associate_memories: `associations` exceeds max {BATCH_MAX_ITEMS} items")
    prepared = []
    for index, item in enumerate(associations):
        if not isinstance(item, Mapping):
            raise ToolError(f"associate_memories: associations[{index}] must be an object")
        prepared.append(_association(item, f"associations[{index}]"))
    store = get_store()
    succeeded: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for index, association in enumerate(prepared):
        props = dict(association)
        try:
            edge = store.associate(props.pop("memory1_id"), props.pop("memory2_id"), props.pop("type"),
                                   props.pop("strength"), **props)
        except LocalMemError as exc:
            failed.append({"index": index, "memory1_id": association["memory1_id"],
                           "memory2_id": association["memory2_id"], "reason": exc.message, "code": exc.code})
            continue
        succeeded.append({"index": index, "memory1_id": edge["memory1_id"], "memory2_id": edge["memory2_id"],
                          "relation_type": edge["relation_type"], "strength": edge["strength"],
                          **{k: edge[k] for k in ("updated", "previous_strength", "warnings") if k in edge}})
    total = len(prepared)
    summary = f"{len(succeeded)}/{total} associations created successfully"
    status = "success" if not failed else "partial_success" if succeeded else "error"
    structured = {"success": not failed, "message": summary, "status": status,
                  "created_count": len(succeeded), "failed_count": len(failed),
                  "succeeded": succeeded, "failed": failed, "summary": summary}
    head = ("Association created successfully!" if not failed else
            "Association completed with failures." if succeeded else "No associations were created.")
    text = f"{head}\n\nMessage: {summary}\n\nCreated: {len(succeeded)}\nFailed: {len(failed)}"
    for failure in failed[:20]:
        text += f"\n- associations[{failure['index']}]: {failure['reason']}"
    if len(failed) > 20:
        text += f"\n- … and {len(failed) - 20} more"
    return ToolOutput([text], structured, is_error=not succeeded)


# -- update / delete / health -------------------------------------------------------------------------


def update_memory(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    memory_id = args.get("memory_id")
    memory_id = memory_id.strip() if isinstance(memory_id, str) else ""
    if not memory_id:
        raise ToolError("update_memory: memory_id is required")
    fields = {k: args[k] for k in UPDATE_FIELDS if k in args and (args[k] is not None or k == "t_invalid")}
    if not fields:
        raise ToolError(f"update_memory: nothing to update; pass at least one of {', '.join(UPDATE_FIELDS)}")
    notes = read_tag_field(fields)
    try:
        record = get_store().update(memory_id, **fields)
    except NotFoundError:
        raise _no_such_memory("update_memory", memory_id) from None
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


def check_database_health(get_store: StoreGetter, args: Mapping[str, Any]) -> ToolOutput:
    try:
        health = get_store().health()
    except Exception as exc:  # a store that cannot open is an unhealthy backend, not a tool failure
        error = exc.message if isinstance(exc, LocalMemError) else f"{type(exc).__name__}: {exc}"
        structured = {"status": "error", "backend": "localmem", "statistics": {}, "error": error}
        return ToolOutput([f"❌ localmem Health Status\n\nStatus: error\nBackend: localmem\nError: {error}"],
                          structured)
    embedder = health.get("embedder") or {}
    status = health.get("status") if health.get("status") in ("healthy", "degraded") else "error"
    problems: list[str] = []
    if not health.get("indexes_agree", True):
        problems.append("indexes disagree (run `localmem doctor --repair`)")
    if embedder.get("error"):
        problems.append(f"embedding model unavailable: {embedder['error']}")
        if status == "healthy":
            status = "degraded"
    statistics = {**health, "timestamp": _now_iso()}
    structured: dict[str, Any] = {"status": status, "backend": "localmem", "statistics": statistics}
    if problems:
        statistics["problems"] = problems
    emoji = "✅" if status == "healthy" else "⚠️" if status == "degraded" else "❌"
    lines = [
        f"{emoji} localmem Health Status", "",
        f"Status: {status}", "Backend: localmem",
        f"Memories: {health.get('memory_count')}",
        f"Vectors: {health.get('vector_count')}",
        f"Full-text rows: {health.get('fts_count')}",
        f"Relationships: {health.get('edge_count')}",
        (f"Embedder: {embedder.get('name')} ({embedder.get('dimensions')} dims, "
         f"{'available' if embedder.get('available') else 'unavailable'})"),
        f"Schema version: {health.get('schema_version')}",
        f"Database: {health.get('path')}",
        f"Timestamp: {statistics['timestamp']}",
    ]
    lines += [f"Problem: {p}" for p in problems]
    return ToolOutput(["\n".join(lines)], structured)


HANDLERS: dict[str, Callable[[StoreGetter, Mapping[str, Any]], ToolOutput]] = {
    "store_memory": store_memory,
    "recall_memory": recall_memory,
    "associate_memories": associate_memories,
    "update_memory": update_memory,
    "delete_memory": delete_memory,
    "check_database_health": check_database_health,
}


def call_tool(get_store: StoreGetter, name: str, arguments: Mapping[str, Any] | None) -> ToolOutput:
    """Run one tool; every failure comes back as an ``is_error`` output."""
    handler = HANDLERS.get(name)
    if handler is None:
        return ToolError(f"Unknown tool: {name} (available: {', '.join(HANDLERS)})",
                         kind="unknown_tool", code=404).output()
    args = dict(arguments or {})
    try:
        check_arguments(name, args)
        return handler(get_store, args)
    except ToolError as exc:
        return exc.output()
    except NotFoundError as exc:
        return ToolError(f"{name}: {exc.message}", kind="not_found", code=exc.code).output()
    except ValidationError as exc:
        return ToolError(f"{name}: {exc.message}", kind="validation_error", code=exc.code).output()
    except LocalMemError as exc:
        return ToolError(f"{name}: {exc.message}", kind="error", code=exc.code).output()
    except Exception as exc:  # never let a tool call take the server down
        log.error("tool %s failed:\n%s", name, traceback.format_exc())
        return ToolError(f"{name}: internal error: {type(exc).__name__}: {exc}",
                         kind="internal_error", code=500).output()
