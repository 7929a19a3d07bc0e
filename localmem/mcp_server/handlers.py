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
from typing import Any

from ..errors import LocalMemError, NotFoundError, ValidationError
from . import formatting
from .association_tools import associate_memories
from .recall_tool import RANKED_ONLY_PARAMS
from .tool_arguments import _clean_tags, _present, check_arguments
from .tool_output import StoreGetter, ToolError, ToolOutput, _no_such_memory, _now_iso
from .tools import ENUMERATION_MAX_LIMIT
from .write_tools import delete_memory, store_memory, update_memory

log = logging.getLogger("localmem.mcp")


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
        unused = [name for name, value in args.items() if name not in ("memory_id", "format") and _present(value)
                  and value is not False and not (name == "offset" and value == 0)]
        if unused:
            result["warnings"] = [f"memory_id fetches that one memory; not used: {', '.join(unused)}"]
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
    notes: list[str] = []  # how the tags were read, said as ranked mode says it
    tags = _clean_tags(args.get("tags"), notes)
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
    result = formatting.enumeration_result(page)
    if notes:
        result["warnings"] = notes
    return result


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


# -- health and dispatch -------------------------------------------------------------------------


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
