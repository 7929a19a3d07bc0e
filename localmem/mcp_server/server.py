"""The MCP stdio server, on the official ``mcp`` SDK's low-level ``Server``.

``build_server(store_factory)`` registers ``tools/list`` and ``tools/call``
handlers; ``run_stdio(store_factory)`` serves them over stdin/stdout.

Start-up stays quick: nothing opens the store (and so loads an embedding
model) before the client's handshake. The store is created by the first tool
call, or earlier by a background warm-up thread that starts once the client
has initialized (``notifications/initialized``) or listed the tools —
whichever comes first. Tool calls run in worker threads, so a slow call never
blocks the protocol loop; ``MemoryStore`` serializes its own calls.

The stdio transport is localmem's own (``transport.py``): the SDK's drops a
line its JSON parser refuses (a lone surrogate escape, invalid UTF-8) without
an answer; this one answers every request.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server

if not hasattr(Server, "add_request_handler"):  # the v1 SDK registers handlers with decorators
    raise ImportError("localmem's MCP server needs the official mcp SDK version 2 (pip install 'mcp>=2.3')")

from .. import __version__
from .handlers import call_tool
from .tools import INSTRUCTIONS, TOOLS
from .transport import stdio_transport

if TYPE_CHECKING:
    from ..store import MemoryStore

SERVER_NAME = "localmem"
log = logging.getLogger("localmem.mcp")


class LazyStore:
    """Creates the store on first use (thread-safe); a failed open is retried on the next use."""

    def __init__(self, factory: Callable[[], MemoryStore]) -> None:
        self._factory = factory
        self._open_lock = threading.Lock()  # held while the factory runs (maybe seconds)
        self._warm_lock = threading.Lock()  # never held for long: taken on the event loop
        self._store: MemoryStore | None = None
        self._warm_up: threading.Thread | None = None

    @property
    def opened(self) -> bool:
        return self._store is not None

    def get(self) -> MemoryStore:
        store = self._store
        if store is not None:
            return store
        with self._open_lock:
            if self._store is None:
                self._store = self._factory()
            return self._store

    def start_warm_up(self) -> None:
        """Open the store and load the embedding model in a daemon thread (once, without blocking)."""
        with self._warm_lock:
            if self._warm_up is not None or self._store is not None:
                return
            self._warm_up = threading.Thread(target=self._warm, name="localmem-mcp-warm-up", daemon=True)
            self._warm_up.start()

    def _warm(self) -> None:
        try:
            self.get().warm_up()
        except Exception as exc:  # reported again, as a tool error, by the next tool call
            log.warning("localmem MCP warm-up: %s: %s", type(exc).__name__, exc)

    def close(self) -> None:
        with self._open_lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()


def tool_definitions() -> list[types.Tool]:
    """The six tools as SDK ``Tool`` objects."""
    tools = []
    for spec in TOOLS:
        tools.append(types.Tool(
            name=spec["name"],
            title=spec["title"],
            description=spec["description"],
            input_schema=spec["inputSchema"],
            output_schema=spec["outputSchema"],
            annotations=types.ToolAnnotations(
                title=spec["annotations"]["title"],
                read_only_hint=spec["annotations"]["readOnlyHint"],
                destructive_hint=spec["annotations"]["destructiveHint"],
                idempotent_hint=spec["annotations"]["idempotentHint"],
                open_world_hint=spec["annotations"]["openWorldHint"],
            ),
            meta={"anthropic/alwaysLoad": True} if spec.get("always_load") else None,
        ))
    return tools


def build_server(store_factory: Callable[[], MemoryStore], *, warm_up: bool = True) -> Server[Any]:
    """The MCP server (SDK ``Server``) for a store made by ``store_factory`` on first use.

    ``warm_up=False`` keeps the store closed until the first tool call.
    ``server.localmem_store`` is the :class:`LazyStore`; the store is closed
    when the server's run ends.
    """
    lazy = LazyStore(store_factory)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            lazy.close()

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if warm_up:
            lazy.start_warm_up()
        return types.ListToolsResult(tools=tool_definitions())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        output = await anyio.to_thread.run_sync(call_tool, lazy.get, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=text) for text in output.texts],
            structured_content=output.structured,
            is_error=output.is_error,
        )

    async def on_initialized(ctx: Any, params: types.NotificationParams | None) -> None:
        if warm_up:
            lazy.start_warm_up()

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title="localmem",
        description="Local AutoMem-compatible memory store in one SQLite file",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, on_initialized)
    server.localmem_store = lazy  # type: ignore[attr-defined]
    return server


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_transport() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(store_factory: Callable[[], MemoryStore]) -> None:
    """Serve the six tools over stdin/stdout until the client disconnects."""
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                            format="localmem-mcp %(levelname)s %(message)s")
    server = build_server(store_factory)
    anyio.run(serve_stdio, server)
