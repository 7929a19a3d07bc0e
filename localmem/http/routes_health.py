"""GET /health: the store's counts and index state, trimmed to what the caller may see."""

from __future__ import annotations

from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Scope

from .. import __version__
from ..store import MemoryStore
from ..timeparse import format_timestamp
from .authentication import ADMIN_SCOPE_KEY, AUTHENTICATED_SCOPE_KEY, CONTEXTS_SCOPE_KEY
from .endpoints import Endpoint

# What /health shows a caller that is not the admin: liveness, and for a scoped
# token the storage state (the vector channel's among it) too; never counts,
# the file path or its size.
HEALTH_ANONYMOUS = ("status", "service", "version", "timestamp")
HEALTH_SCOPED = HEALTH_ANONYMOUS + ("storage",)


def _health_for(scope: Scope, body: dict[str, Any]) -> dict[str, Any]:
    body = {**body, "service": "localmem", "version": __version__}
    if scope.get(ADMIN_SCOPE_KEY):
        return body
    if not scope.get(AUTHENTICATED_SCOPE_KEY):
        return {key: body[key] for key in HEALTH_ANONYMOUS}
    embedder = body.get("embedder", {})
    contexts = scope.get(CONTEXTS_SCOPE_KEY)
    return {**{key: body[key] for key in HEALTH_SCOPED},
            "embedder": {key: embedder.get(key) for key in ("name", "dimensions", "available")},
            "contexts": "*" if contexts is None else sorted(contexts)}


def _storage_state(store: MemoryStore, info: dict[str, Any], vector_ok: bool) -> dict[str, str]:
    """What actually holds the memories: one SQLite file, its FTS5 index and its vector index."""
    if not store.has_vector_index:
        vectors = "unconfigured"
    elif not vector_ok:
        vectors = "embedder_unavailable"
    else:
        vectors = "ok" if info.get("vector_count") == info.get("embedding_count") else "drift"
    return {
        "engine": "sqlite",
        "full_text_index": "ok" if info.get("fts_count") == info.get("memory_count") else "drift",
        "vector_index": vectors,
    }


class HealthEndpoints(NamedTuple):
    health: Endpoint


def health_endpoints(store: MemoryStore) -> HealthEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""
    call = run_in_threadpool

    async def health(request: Request) -> JSONResponse:
        info = await call(store.health)
        vector_ok = bool(info.get("embedder", {}).get("available"))
        if not info.get("indexes_agree", True):
            sync_status = "drift_detected"
        elif not store.has_vector_index:
            sync_status = "unknown"
        elif info.get("vector_count") == info.get("memory_count"):
            sync_status = "synced"
        else:
            sync_status = "drift_detected"
        degraded = not vector_ok or sync_status == "drift_detected"
        dims = info.get("embedder", {}).get("dimensions")
        body = {
            **info,
            "status": "degraded" if degraded else "healthy",
            # No FalkorDB or Qdrant here: say what the storage is (AutoMem's MCP client
            # prints "falkordb"/"qdrant" only when present, so they are left out).
            "storage": _storage_state(store, info, vector_ok),
            "sync_status": sync_status,
            "vector_dimensions": {"configured": dims, "effective": dims, "collection": dims,
                                  "mismatch": False},
            "enrichment": {"status": "stopped", "queue_depth": 0, "pending": 0, "inflight": 0,
                           "processed": 0, "failed": 0},
            "graph": "sqlite",  # the edges live in the same SQLite file
            "timestamp": format_timestamp(store.now()),
        }
        return JSONResponse(_health_for(request.scope, body))

    return HealthEndpoints(health)
