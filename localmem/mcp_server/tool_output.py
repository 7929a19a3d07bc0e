"""What every MCP tool answers with: :class:`ToolOutput`, :class:`ToolError`, and the
small helpers that shape warnings and the errors several tools share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .tools import CONTENT_HARD_LIMIT

if TYPE_CHECKING:
    from ..store import MemoryStore

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
