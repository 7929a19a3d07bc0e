"""MCP over Streamable HTTP: the stdio server's six tools through the SDK's session manager.

``localmem serve`` mounts ``session_manager(store).handle_request`` at ``/mcp``
(``localmem.http.mcp_mount``): the tools, their handlers and their answers are
the ones ``build_server`` gives the stdio server, over the store the HTTP API
uses (one ``MemoryStore``, one lock; this server never closes it).

Stateless: each POST is served on its own, with no ``Mcp-Session-Id``, so any
number of clients (and any replica) can serve it and nothing is kept between
requests. Clients of the 2026-07-28 revision send self-contained requests;
older ones still do their ``initialize`` handshake, answered anew on every
POST. Answers are plain JSON (``json_response``): one request, one response,
no event stream held open, which also lets the server stop at once.

Host and Origin are checked before this (``localmem.http.guard``), and so is
the API token (``localmem.http.authentication``); the SDK's own DNS-rebinding
check is therefore off here, while its Content-Type check and body cap stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from .server import build_server

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["session_manager"]


def session_manager(store: MemoryStore, *, max_body_bytes: int) -> StreamableHTTPSessionManager:
    """The SDK's Streamable HTTP session manager over ``store``: stateless, JSON answers, request
    bodies capped at ``max_body_bytes`` (413 beyond). Its ``run()`` must be entered before it serves."""
    server = build_server(lambda: store, warm_up=False, owns_store=False)
    return StreamableHTTPSessionManager(
        server,
        json_response=True,
        stateless=True,
        security_settings=None,  # Host/Origin: localmem's RequestGuard, which runs first
        max_request_body_size=max_body_bytes,
    )
