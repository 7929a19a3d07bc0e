"""Request bodies: ``application/json`` only, bounded in size, depth and numbers.

Every way a body can be wrong gets a 4xx naming the problem, never a 500:
415 for another content type (a web page can send text/plain or form bodies
cross-origin without asking), 413 for a body over ``MAX_BODY_BYTES``, 400
"JSON body is required: <why>" for bytes that are not a JSON object, nest
deeper than ``MAX_JSON_DEPTH``, hold a number no route can use (an
integer beyond 64 bits, a float that overflows to infinity) or give a key twice in one object.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request

from .errors import LocalMemError, ValidationError
from .validation import MAX_JSON_DEPTH, JSONTextError, decode_json

__all__ = ["MAX_BODY_BYTES", "MAX_JSON_DEPTH", "parse_json_object", "read_json_object"]

MAX_BODY_BYTES = 32 * 1024 * 1024
REQUIRED = "JSON body is required"  # AutoMem's message; the reason follows it


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` as a JSON object, or ``ValidationError`` "JSON body is required: <why>"."""
    if not raw.strip():
        raise ValidationError(f"{REQUIRED}: the body is empty")
    try:
        payload = decode_json(raw, "body", unique_keys=True)
    except JSONTextError as exc:
        raise ValidationError(f"{REQUIRED}: the body is not valid JSON: {exc.reason}") from None
    if not isinstance(payload, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null",
                int: "a number", float: "a number"}[type(payload)]
        raise ValidationError(f"{REQUIRED}: the body is {kind}, not an object")
    return payload


def _media_type(request: Request) -> str | None:
    value = request.headers.get("content-type")
    return None if value is None else value.split(";", 1)[0].strip().lower()


async def read_json_object(request: Request, max_bytes: int | None = None) -> dict[str, Any]:
    """The request body as a JSON object (see the module docstring for the refusals), at
    most ``max_bytes`` (default ``MAX_BODY_BYTES``; a route may ask for less)."""
    max_bytes = MAX_BODY_BYTES if max_bytes is None else max_bytes
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise LocalMemError(f"Request body exceeds {max_bytes} bytes", code=413)
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
            if size > max_bytes:
                raise LocalMemError(f"Request body exceeds {max_bytes} bytes", code=413)
            chunks.append(chunk)
    except ClientDisconnect:
        # The client went away or the server's body timeout closed the connection;
        # nobody reads this answer, but it must not be logged as a server error.
        raise LocalMemError("The request body was not received in full", code=408) from None
    return parse_json_object(b"".join(chunks))
