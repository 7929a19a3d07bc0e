"""The MCP ``associate_memories`` tool: one relation, a batch of them, or taking one away."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import LocalMemError
from ..relations import supersession_meaning
from . import formatting
from .tool_output import StoreGetter, ToolError, ToolOutput, _warning_lines
from .tools import ASSOCIATION_FIELDS, ASSOCIATION_PROPERTY_SCHEMAS, BATCH_MAX_ITEMS


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

