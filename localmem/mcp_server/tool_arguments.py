"""Checking a tool's arguments: its JSON input schema, and the readings of optional
arguments and tags that every tool shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tags import parse_tags
from .tool_output import ToolError
from .tools import TOOLS_BY_NAME


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
