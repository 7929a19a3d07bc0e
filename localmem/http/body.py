"""Request bodies: ``application/json`` only, bounded in size, depth and numbers.

Every way a body can be wrong gets a 4xx naming the problem, never a 500:
415 for another content type (a web page can send text/plain or form bodies
cross-origin without asking), 413 for a body over ``MAX_BODY_BYTES``, 400
"JSON body is required: <why>" for bytes that are not a JSON object, nest
deeper than ``MAX_JSON_DEPTH``, or hold a number no route can use (an
integer beyond 64 bits, a float that overflows to infinity).
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import ClientDisconnect, Request

from ..errors import LocalMemError, ValidationError

__all__ = ["MAX_BODY_BYTES", "MAX_JSON_DEPTH", "parse_json_object", "read_json_object"]

MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_JSON_DEPTH = 64
INT_MIN, INT_MAX = -2**63, 2**63 - 1  # what SQLite can store
_INT_DIGITS = 20  # longer integer literals are out of range whatever their digits
REQUIRED = "JSON body is required"  # AutoMem's message; the reason follows it


class _BadNumber(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not valid JSON")


def _parse_int(text: str) -> int:
    # Checked before int(): a 5,000-digit literal would otherwise hit Python's
    # int-conversion limit, and a 19-digit one may still not fit in 64 bits.
    if len(text.lstrip("-")) <= _INT_DIGITS:
        value = int(text)
        if INT_MIN <= value <= INT_MAX:
            return value
    shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} characters)"
    raise _BadNumber(f"the integer {shown} is out of range (integers must fit in 64 bits)")


def _check_shape(value: Any) -> None:
    """Depth and float range, iteratively (so the check itself cannot recurse too deep)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            if isinstance(item, float) and not math.isfinite(item):
                raise _BadNumber("a number is out of range (it overflows a 64-bit float)")
            continue
        if depth > MAX_JSON_DEPTH:
            raise _BadNumber(f"it is nested deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` as a JSON object, or ``ValidationError`` "JSON body is required: <why>"."""
    if not raw.strip():
        raise ValidationError(f"{REQUIRED}: the body is empty")
    try:
        payload = json.loads(raw, parse_constant=_reject_constant, parse_int=_parse_int)
        _check_shape(payload)
    except _BadNumber as exc:
        raise ValidationError(f"{REQUIRED}: {exc}") from None
    except RecursionError:
        raise ValidationError(f"{REQUIRED}: it is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{REQUIRED}: the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{REQUIRED}: the body is not valid JSON ({exc.msg} at line "
                              f"{exc.lineno} column {exc.colno})") from None
    except ValueError as exc:
        raise ValidationError(f"{REQUIRED}: the body is not valid JSON ({exc})") from None
    if not isinstance(payload, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null",
                int: "a number", float: "a number"}[type(payload)]
        raise ValidationError(f"{REQUIRED}: the body is {kind}, not an object")
    return payload


def _media_type(request: Request) -> str | None:
    value = request.headers.get("content-type")
    return None if value is None else value.split(";", 1)[0].strip().lower()


async def read_json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object (see the module docstring for the refusals)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise LocalMemError(f"Request body exceeds {MAX_BODY_BYTES} bytes", code=413)
    if _media_type(request) != "application/json":
        got = request.headers.get("content-type")
        shown = "no Content-Type" if got is None else f"Content-Type {got[:80]!r}"
        raise LocalMemError(
            f"Content-Type must be application/json (got {shown}): send the body as JSON with "
            f"that header (curl: --json, or -H 'Content-Type: application/json'). Other types are "
            f"refused because any web page can send them.", code=415)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise LocalMemError(f"Request body exceeds {MAX_BODY_BYTES} bytes", code=413)
            chunks.append(chunk)
    except ClientDisconnect:
        # The client went away or the server's body timeout closed the connection;
        # nobody reads this answer, but it must not be logged as a server error.
        raise LocalMemError("The request body was not received in full", code=408) from None
    return parse_json_object(b"".join(chunks))
