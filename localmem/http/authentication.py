"""Who is calling: the API token (or the browser's session) checked on every request.

The grant found travels in the ASGI scope under the ``*_SCOPE_KEY`` names,
for the routes (recall's contexts, /health's detail) to read.
"""

from __future__ import annotations

import hmac
from urllib.parse import unquote_to_bytes

from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..ui import auth as ui_auth
from .endpoints import error_response
from .mcp_mount import MCP_PATH
from .security import ADMIN_GRANT, Grant, TokenScopes

AUTHENTICATED_SCOPE_KEY = "localmem.authenticated"
# True for the admin token, and for every caller when no token is configured.
ADMIN_SCOPE_KEY = "localmem.admin"
# The contexts the caller's token may see (None: every context).
CONTEXTS_SCOPE_KEY = "localmem.contexts"
# Routes a scoped token may call: recall over its contexts (and /health, trimmed).
CONTEXT_AWARE_PATHS = frozenset({("POST", "/api/v1/memory/recall")})
HOOKS_PREFIX = "/hooks/"  # POST /hooks/{event} asks for the server's hook secret instead


def _strip_api_key(query_string: bytes) -> tuple[bytes, bytes | None]:
    """Remove ``api_key`` from a raw query string; returns (rest, first api_key value)."""
    kept: list[bytes] = []
    found: bytes | None = None
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        if unquote_to_bytes(name.replace(b"+", b" ")) == b"api_key":
            if found is None:
                found = unquote_to_bytes(value.replace(b"+", b" "))
            continue
        kept.append(part)
    return b"&".join(kept), found


def _token_from_headers(scope: Scope) -> bytes | None:
    """``Authorization: Bearer <t>`` (any case), else ``X-API-Key`` (AutoMem's order)."""
    authorization = api_key = None
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and authorization is None:
            authorization = value
        elif name == b"x-api-key" and api_key is None:
            api_key = value
    if authorization is not None and authorization[:7].lower() == b"bearer ":
        return authorization[7:].strip()
    if api_key is not None and api_key.strip():
        return api_key.strip()
    return None


class AuthMiddleware:
    """Require an API token on every route but ``/health``, ``/hooks/`` (its own secret) and OPTIONS.

    ``tokens`` maps each accepted token to its ``Grant``. The admin token
    may call everything; a scoped token (``TOKEN=ctx`` or ``TOKEN=*``) only
    ``POST /api/v1/memory/recall``, over its contexts; anything else answers
    403. The grant travels in the ASGI scope to the route.

    ``?api_key=`` is always removed from the query string before the request
    goes further, so it never reaches a route, recall, or the access log.

    Under ``/ui/`` a browser signed in through ``/ui/login`` (``ui.auth``)
    counts as the admin; a page asked for there without it is sent to sign in.
    """

    def __init__(self, app: ASGIApp, tokens: TokenScopes | None,
                 sessions: ui_auth.Sessions | None = None) -> None:
        self.app = app
        self.tokens = [(t.encode("utf-8"), contexts) for t, contexts in (tokens or {}).items()]
        self.sessions = sessions

    def _match(self, supplied: bytes | None) -> Grant | None:
        found = None
        if supplied is None:
            return found
        for token, grant in self.tokens:  # every comparison runs: no early exit to time
            if hmac.compare_digest(supplied, token) and found is None:
                found = grant
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # In place: the server's access log reads the same scope.
        scope["query_string"], query_token = _strip_api_key(scope.get("query_string", b""))
        scope[CONTEXTS_SCOPE_KEY] = None
        if not self.tokens:
            scope[AUTHENTICATED_SCOPE_KEY] = scope[ADMIN_SCOPE_KEY] = True
            await self.app(scope, receive, send)
            return
        grant = self._match(_token_from_headers(scope) or query_token)
        in_ui = scope["path"] == "/ui" or scope["path"].startswith(ui_auth.UI_PREFIX)
        if grant is None and in_ui and self.sessions is not None:
            cookie = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"cookie"), None)
            if self.sessions.valid(ui_auth.session_cookie(cookie)):
                grant = ADMIN_GRANT
        ok = grant is not None
        scope[AUTHENTICATED_SCOPE_KEY] = ok
        scope[ADMIN_SCOPE_KEY] = ok and grant.admin
        scope[CONTEXTS_SCOPE_KEY] = grant.contexts if ok else None
        # /hooks/ checks its own secret (routes_hooks): the hook has no API token to send.
        open_route = (scope["method"] == "OPTIONS" or scope["path"] in ("/health", "/ui", "/")
                      or ui_auth.is_open(scope["path"]) or scope["path"].startswith(HOOKS_PREFIX))
        scoped_out = (ok and not grant.admin
                      and (scope["method"], scope["path"]) not in CONTEXT_AWARE_PATHS)
        if scoped_out and not open_route:
            # MCP's recall_memory has no context scoping, and its other tools write: a
            # scoped token gets no MCP at all rather than a recall that ignores its scope.
            what = ("MCP (/mcp) needs the admin token (LOCALMEM_API_TOKEN)" if scope["path"] == MCP_PATH
                    else "Use the admin token (LOCALMEM_API_TOKEN) for other routes")
            response = error_response(
                403, f"This token is scoped (recall only): it may call only POST /api/v1/memory/recall. {what}.")
            await response(scope, receive, send)
            return
        if ok or open_route:
            await self.app(scope, receive, send)
            return
        if scope["path"] == ui_auth.UI_PREFIX and scope["method"] in ("GET", "HEAD"):
            await RedirectResponse("/ui/login", status_code=303)(scope, receive, send)
            return
        response = error_response(401, "Unauthorized", headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)
