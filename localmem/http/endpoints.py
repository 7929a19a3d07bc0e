"""What every HTTP route shares: JSON error envelopes, the endpoint wrapper, body and query checks.

Each route module builds its endpoints over the store with these; ``app``
assembles them into the route table.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import LocalMemError, ValidationError
from ..store import MemoryStore

logger = logging.getLogger("localmem.http")

MAX_BATCH = 500  # memories or associations per batch request

Endpoint = Callable[[Request], Awaitable[JSONResponse]]


def error_response(code: int, message: str, *, headers: dict[str, str] | None = None,
                   **extra: Any) -> JSONResponse:
    body = {"status": "error", "code": code, "message": message, **extra}
    return JSONResponse(body, status_code=code, headers=headers)


def locked(store: MemoryStore) -> AbstractContextManager[Any]:
    """The store's (re-entrant) lock, to make a few store calls one step."""
    lock = getattr(store, "lock", None)
    return lock if lock is not None else nullcontext()


def touch_memories(store: MemoryStore, memory_ids: list[str]) -> None:
    """Mark memories as accessed (AutoMem does so on GET /memory/{id} and by-tag)."""
    touch = getattr(store, "touch", None)
    if touch is None or not memory_ids:
        return
    with locked(store):
        touch(memory_ids, store.now())


def vector_channel(store: MemoryStore) -> bool:
    return (getattr(store, "embedder", None) is not None and store.has_vector_index
            and store.embedder_error is None)


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def known_fields(payload: dict[str, Any], allowed: Iterable[str], where: str = "") -> dict[str, Any]:
    """The body's fields, all of which the route must know (AutoMem ignores the rest silently).

    A misspelt field (``improtance``) would otherwise be dropped without a
    word and the memory stored or updated without it.
    """
    allowed = set(allowed)
    unknown = sorted(set(payload) - allowed)
    if unknown:
        raise ValidationError(
            f"{where}unknown field{'' if len(unknown) == 1 else 's'} "
            f"{', '.join(repr(k) for k in unknown)}; allowed: {', '.join(sorted(allowed))}")
    return dict(payload)


def query_value(request: Request, name: str) -> str | None:
    """A query parameter's value (as Flask's ``args.get``); blank → None. Given more than once
    with different values it is a 400 naming it (Flask would take the first, silently)."""
    values = list(dict.fromkeys(v for v in request.query_params.getlist(name) if v.strip()))
    if len(values) > 1:
        shown = ", ".join(repr(v[:40]) for v in values[:3])
        raise ValidationError(f"query parameter '{name}' was given {len(values)} different values "
                              f"({shown}): give it once")
    return values[0] if values else None


def _unknown_names(request: Request, known: Iterable[str]) -> list[str]:
    """The query parameters ``request`` gives that a route does not know, once each in order
    (``api_key`` is the server's own, known to every route)."""
    allowed = {*known, "api_key"}
    return [k for k in dict.fromkeys(request.query_params.keys()) if k not in allowed]


def unknown_parameters(request: Request, known: Iterable[str]) -> list[str]:
    """A warning naming the query parameters a GET route does not know (at most 10 of them, so
    the answer stays small), or nothing. They are ignored, as AutoMem ignores them, but said:
    a misspelt filter would otherwise widen the answer unseen."""
    unknown = _unknown_names(request, known)
    if not unknown:
        return []
    shown = ", ".join(repr(k[:40]) for k in unknown[:10]) + (f" and {len(unknown) - 10} more"
                                                            if len(unknown) > 10 else "")
    return [f"query parameters this route does not know were ignored: {shown}"]


def refuse_unknown_parameters(request: Request, known: Iterable[str]) -> None:
    """On a route that deletes, a query parameter it does not know is a 400 before anything goes
    (``limit=1`` or ``dry_run=true`` would not be obeyed; a warning after the delete is too late)."""
    unknown = _unknown_names(request, known)
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:10])
        raise ValidationError(f"query parameter{'s' if len(unknown) > 1 else ''} {shown} not known to this "
                              f"route; nothing was deleted (it takes {', '.join(known) or 'none'})")


def with_warnings(body: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """``body`` with ``notes`` added to its ``warnings``."""
    if notes:
        body["warnings"] = [*body.get("warnings", ()), *notes]
    return body


def endpoint(fn: Endpoint) -> Endpoint:
    """Errors as JSON envelopes: LocalMemError by its code, anything else 500 (logged)."""
    @functools.wraps(fn)
    async def wrapper(request: Request) -> JSONResponse:
        try:
            return await fn(request)
        except HTTPException:
            raise
        except LocalMemError as exc:
            code = exc.code if 400 <= exc.code <= 599 else 500
            if code >= 500:
                logger.error("%s %s failed: %s", request.method, request.url.path, exc.message)
            body = {**exc.to_dict(), "code": code}  # the envelope, plus any detail (422)
            return JSONResponse(body, status_code=code)
        except Exception:
            logger.exception("Unhandled error in %s %s", request.method, request.url.path)
            return error_response(500, "Internal server error")
    return wrapper


def by_method(**handlers: Endpoint) -> Endpoint:
    """One route, several methods (so a 405 lists them all in ``Allow``)."""
    async def dispatch(request: Request) -> JSONResponse:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)
    return endpoint(dispatch)
