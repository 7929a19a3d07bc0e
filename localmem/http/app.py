"""The HTTP API: AutoMem-compatible routes over a MemoryStore (Starlette).

Every response is JSON, errors included, in AutoMem's envelope
``{"status": "error", "code": N, "message": "..."}``. The store's methods are
synchronous (and serialized by the store's own lock), so each endpoint runs
them in the thread pool and the event loop stays free.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from ..store import MemoryStore
from ..ui import auth as ui_auth
from ..ui.routes import ui_routes
from .authentication import AuthMiddleware
from ..request_body import MAX_BODY_BYTES
from .endpoints import MAX_BATCH, by_method, endpoint, error_response
from .guard import RequestGuard
from .mcp_mount import MCP_PATH, McpMount
from .policy import request_policy
from .routes_admin import admin_endpoints
from .routes_sync import sync_endpoints
from .routes_edges import edge_endpoints
from .routes_health import health_endpoints
from .routes_hooks import hook_endpoint
from .routes_memories import memory_endpoints
from .routes_recall import recall_endpoints
from .security import TOKEN_ENV_VARS, resolve_admin_token, resolve_token, resolve_tokens

# Headers a browser-based MCP client sends to /mcp (allowed by CORS for allowed origins).
MCP_REQUEST_HEADERS = ("Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id", "Last-Event-ID")

__all__ = ["MAX_BATCH", "MAX_BODY_BYTES", "TOKEN_ENV_VARS", "create_app", "resolve_token",
           "resolve_tokens"]


def create_app(store: MemoryStore, *, token: str | None = None,
               tokens: str | dict[str, Any] | None = None,
               cors_origins: list[str] | None = None,
               allowed_hosts: str | list[str] | None = None,
               allowed_origins: str | list[str] | None = None,
               admin_token: str | None = None, hook_secret: str | None = None) -> Starlette:
    """The HTTP API over ``store``.

    ``token`` (else ``$LOCALMEM_API_TOKEN`` / ``$AUTOMEM_API_TOKEN``) turns on
    authentication with the admin token; ``tokens`` (else
    ``$LOCALMEM_API_TOKENS``, ``"tokenA=ctx1,ctx2;tokenB=*"``) adds recall-only
    tokens scoped to contexts. ``allowed_hosts`` (else
    ``$LOCALMEM_ALLOWED_HOSTS``) are the ``Host`` names answered besides
    loopback ones; ``allowed_origins`` (else ``$LOCALMEM_ALLOWED_ORIGINS``;
    ``cors_origins`` is an older name, added to them) the browser origins
    allowed, with CORS. See ``policy`` for why. ``admin_token`` (else
    ``$ADMIN_API_TOKEN``) is the second secret the admin routes need, in
    ``X-Admin-Token``, as AutoMem has it. ``hook_secret`` is the secret
    ``POST /hooks/{event}`` asks for (``routes_hooks``; without one it answers 404).

    ``/mcp`` serves the MCP tools (``mcp_mount``) under the same rules; it needs
    the app's lifespan to run (uvicorn ``lifespan="on"``, as ``serve`` has it).
    """
    api_tokens = resolve_tokens(token, tokens)
    admin_secret = resolve_admin_token(admin_token)
    policy = request_policy(allowed_hosts, allowed_origins)
    if cors_origins:
        policy = request_policy(policy.allowed_hosts, [*policy.allowed_origins, *cors_origins])
    sessions = ui_auth.Sessions()
    health = health_endpoints(store)
    memories = memory_endpoints(store)
    edges = edge_endpoints(store)
    recall = recall_endpoints(store)
    admin = admin_endpoints(store, admin_secret)
    mcp = McpMount(store, max_body_bytes=MAX_BODY_BYTES)
    sync = sync_endpoints(store)

    routes = [
        Route("/health", endpoint(health.health), methods=["GET"]),
        Route("/memory", endpoint(memories.store_memory), methods=["POST"]),
        # Before /memory/{memory_id}, which would otherwise take these paths.
        Route("/memory/batch", endpoint(memories.store_batch), methods=["POST"]),
        Route("/memory/by-tag", by_method(GET=memories.by_tag, DELETE=memories.delete_by_tag),
              methods=["GET", "DELETE"]),
        Route("/memory/{memory_id}",
              by_method(GET=memories.get_memory, PATCH=memories.update_memory,
                        DELETE=memories.delete_memory),
              methods=["GET", "PATCH", "DELETE"]),
        Route("/associate", by_method(POST=edges.associate, DELETE=edges.dissociate),
              methods=["POST", "DELETE"]),
        Route("/recall", endpoint(recall.recall), methods=["GET"]),
        Route("/memories/{memory_id}/related", endpoint(edges.related), methods=["GET"]),
        Route("/api/v1/memory/recall", endpoint(recall.recall_v1), methods=["POST"]),
        Route("/admin/reembed", endpoint(admin.admin_reembed), methods=["POST"]),
        # The six MCP tools over Streamable HTTP (stateless), for clients on other machines.
        Route(MCP_PATH, mcp),
        # localmem sync URL: this store's side of a sync (routes_sync.py).
        *[Route(f"/sync/{name}", endpoint(getattr(sync, name.replace("-", "_"))), methods=["POST"])
          for name in ("hello", "page", "states", "edge-states", "memory-edges", "put", "put-edges", "bases",
                       "sent", "seen")],
        # "/" has nothing of its own: a person who opens the server's address meets the browser.
        Route("/", lambda request: RedirectResponse("/ui/", status_code=307), methods=["GET", "HEAD"]),
        Route("/hooks/{event}", endpoint(hook_endpoint(store, hook_secret)), methods=["POST"]),
        # The memory browser (localmem ui): its page and the JSON routes it reads.
        *ui_routes(store, sessions, [t for t, grant in api_tokens.items() if grant.admin],
                   endpoint=endpoint),
    ]
    middleware = [Middleware(RequestGuard, policy=policy)]
    if policy.allowed_origins:
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=list(policy.allowed_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["Content-Type", "X-API-Key", "Authorization", *MCP_REQUEST_HEADERS],
        ))
    middleware.append(Middleware(AuthMiddleware, tokens=api_tokens, sessions=sessions))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
        lifespan=mcp.lifespan,
    )
    app.router.redirect_slashes = False  # a redirect is not JSON; /memory/ is simply 404
    app.state.store = store
    app.state.auth_required = bool(api_tokens)
    app.state.ui_sessions = sessions  # localmem ui asks it for a one-time login code
    return app


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, exc.detail, headers=dict(exc.headers or {}))


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    # Only errors outside the endpoints get here; the server logs the traceback.
    return error_response(500, "Internal server error")

