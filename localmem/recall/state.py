"""The current-state filter: hide archived, not-yet-valid and expired memories."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..timeparse import format_timestamp


def state_reason(memory: dict[str, Any], now_iso: str) -> str | None:
    """Why a memory is not current, or None (AutoMem's reason order)."""
    if memory.get("archived"):
        return "archived"
    if memory.get("t_valid") and memory["t_valid"] > now_iso:
        return "not_yet_valid"
    if memory.get("t_invalid") and memory["t_invalid"] <= now_iso:
        return "expired"
    return None


def apply_state_filter(results: list[dict[str, Any]], now: datetime,
                       debug: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Drop results that are not current; returns the kept ones and the state_filter block."""
    now_iso = format_timestamp(now)
    kept: list[dict[str, Any]] = []
    suppressed: list[dict[str, Any]] = []
    for result in results:
        reason = state_reason(result["memory"], now_iso)
        if reason is None:
            kept.append(result)
        else:
            suppressed.append({"id": result["id"], "reason": reason})
    block: dict[str, Any] = {
        "current_only": True,
        "suppressed_count": len(suppressed),
        "replacement_count": 0,
    }
    if debug:
        block["suppressed"] = suppressed
        block["replacements"] = []
    return kept, block
