"""The admin routes: POST /admin/reembed (the API token and, as AutoMem has it, X-Admin-Token)."""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import LocalMemError, ValidationError
from ..store import MemoryStore
from ..request_body import read_json_object
from .endpoints import Endpoint, error_response, known_fields
from .security import admin_token_matches

# POST /admin/reembed: AutoMem's fields, and localmem's ``embedder`` (switch models in place).
REEMBED_FIELDS = frozenset({"limit", "batch_size", "force", "embedder"})
REEMBED_MAX_BATCH = 100  # AutoMem's cap


class AdminEndpoints(NamedTuple):
    admin_reembed: Endpoint


def admin_endpoints(store: MemoryStore, admin_secret: str | None) -> AdminEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""
    call = run_in_threadpool
    reembed_running = threading.Lock()

    async def admin_reembed(request: Request) -> JSONResponse:
        # AutoMem's admin check: the API token (AuthMiddleware) and the admin token.
        if admin_secret is None:
            return error_response(403, "Admin token not configured (set ADMIN_API_TOKEN)")
        if not admin_token_matches(request.scope.get("headers", ()), admin_secret):
            return error_response(401, "Admin authorization required (X-Admin-Token)")
        has_body = (request.headers.get("content-length", "0") != "0"
                    or "transfer-encoding" in request.headers)
        payload = known_fields(await read_json_object(request), REEMBED_FIELDS) if has_body else {}
        batch_size = payload.get("batch_size", 32)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValidationError("'batch_size' must be a positive integer")
        limit = payload.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValidationError("'limit' must be a positive integer")
        if not isinstance(payload.get("force", False), bool):
            raise ValidationError("'force' must be a boolean")
        name = payload.get("embedder")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValidationError("'embedder' must be an embedder name, such as 'hash:384' or a model")

        def work() -> dict[str, Any]:
            from ..embedders import resolve_embedder
            from ..maintenance.reembed import Reembedder

            if not reembed_running.acquire(blocking=False):
                raise LocalMemError("A reembed is already running", code=409)
            try:
                target = resolve_embedder(name) if name is not None else None
                runner = Reembedder(store, target, batch_size=min(batch_size, REEMBED_MAX_BATCH))
                return {**runner.run(limit), "batch_size": runner.batch_size}
            finally:
                reembed_running.release()

        report = await call(work)
        return JSONResponse({"failed": 0, "metadata_preserved": True, **report})

    return AdminEndpoints(admin_reembed)
