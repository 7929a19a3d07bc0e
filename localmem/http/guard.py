"""The outermost ASGI layer: refuse foreign ``Host`` names and browser origins, and
query strings that are not UTF-8.

It runs before CORS and authentication, so a refused request reaches no route
and gets no CORS headers. The rules themselves are in ``policy``.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from .policy import RequestPolicy, host_refusal, origin_refusal, query_string_refusal

__all__ = ["RequestGuard"]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


async def _refuse(send: Send, code: int, message: str) -> None:
    body = json.dumps({"status": "error", "code": code, "message": message},
                      separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": code,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """421 for a ``Host`` the server does not answer to, 403 for a foreign browser origin,
    400 for a query parameter that is not UTF-8."""

    def __init__(self, app: ASGIApp, policy: RequestPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        # 421 Misdirected Request, as the MCP SDK's DNS-rebinding protection answers.
        refusal = host_refusal(host, self.policy)
        if refusal is not None:
            await _refuse(send, 421, refusal)
            return
        own_origin = f"{scope.get('scheme', 'http')}://{host or ''}"
        refusal = origin_refusal(_header(scope, b"origin"), _header(scope, b"sec-fetch-site"),
                                 own_origin, self.policy)
        if refusal is not None:
            await _refuse(send, 403, refusal)
            return
        refusal = query_string_refusal(scope.get("query_string", b""))
        if refusal is not None:
            await _refuse(send, 400, refusal)
            return
        await self.app(scope, receive, send)
