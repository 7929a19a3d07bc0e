"""``/mcp``: the MCP tools over Streamable HTTP, on the HTTP API's port, store and token rules.

The route sits inside the API's middleware, so a request reaches it only past
the Host/Origin guard and the token check (``guard``, ``authentication``).

The MCP SDK (``localmem.mcp_server.streamable``) is imported by the first
request to ``/mcp``, in a worker thread: importing it costs about half a second
that ``localmem serve`` would otherwise spend before it answers ``/health``
(benchmarks/hooks/serve_start.py), and a server nobody asks for MCP never pays it.
The SDK's session manager then runs until the server stops, inside the app's
lifespan (``McpMount.running``); without a lifespan ``/mcp`` answers 503.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from starlette.types import ASGIApp, Receive, Scope, Send

from ..request_body import MAX_BODY_BYTES
from .endpoints import error_response

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["MCP_PATH", "McpMount"]

MCP_PATH = "/mcp"


def _load_session_manager() -> Callable[..., Any]:
    from ..mcp_server.streamable import session_manager

    return session_manager


async def _run(manager: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Hold the session manager's ``run()`` open until cancelled (the server stopping)."""
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


class McpMount:
    """The ASGI endpoint at ``/mcp``: the SDK's Streamable HTTP handler, started on first use.

    ``running()`` is entered by the app's lifespan; it owns the task in which the
    session manager runs, and stopping it stops the manager.
    """

    def __init__(self, store: MemoryStore, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._store = store
        self._max_body_bytes = max_body_bytes
        self._tasks: TaskGroup | None = None
        self._starting: anyio.Lock | None = None
        self._handler: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks, self._starting = tasks, anyio.Lock()
            try:
                yield
            finally:
                self._tasks = self._starting = self._handler = None
                tasks.cancel_scope.cancel()

    def lifespan(self, app: ASGIApp) -> Any:
        """For ``Starlette(lifespan=...)``."""
        return self.running()

    async def _started(self) -> Callable[[Scope, Receive, Send], Awaitable[None]] | None:
        tasks, starting = self._tasks, self._starting
        if tasks is None or starting is None:
            return None
        async with starting:
            if self._handler is None:
                session_manager = await anyio.to_thread.run_sync(_load_session_manager)
                manager = session_manager(self._store, max_body_bytes=self._max_body_bytes)
                await tasks.start(_run, manager)
                self._handler = manager.handle_request
        return self._handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            # Stateless: the server never sends anything unasked, so it offers no event
            # stream (the transport's own answer to this), and none is held open.
            response = error_response(405, "GET /mcp: this MCP server is stateless and offers no event "
                                           "stream; send requests with POST", headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        try:
            handler = await self._started()
        except ImportError as exc:
            response = error_response(501, f"MCP over HTTP needs the 'mcp' extra (pip install 'localmem[mcp]'): {exc}")
            await response(scope, receive, send)
            return
        if handler is None:
            response = error_response(503, "MCP over HTTP runs inside the server's lifespan, and this server "
                                           "was started without one (uvicorn --lifespan off)")
            await response(scope, receive, send)
            return
        await handler(scope, receive, send)
