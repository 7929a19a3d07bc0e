"""The MCP stdio server, on the official ``mcp`` SDK's low-level ``Server``.

``build_server(store_factory)`` registers ``tools/list`` and ``tools/call``
handlers; ``run_stdio(store_factory)`` serves them over stdin/stdout.

The store is created by the first tool call, or earlier by a background
warm-up thread (``lazy_store.LazyStore``) that opens it and loads the models:
``localmem mcp`` starts it as the process starts, before the SDK is imported,
so the two overlap; a server built here without one starts it once the
client has initialized (``notifications/initialized``) or listed the tools. Tool calls run in worker threads, so a slow call never
blocks the protocol loop; ``MemoryStore`` serializes its own calls.

The stdio transport is localmem's own (``transport.py``): the SDK's drops a
line its JSON parser refuses (a lone surrogate escape, invalid UTF-8) without
an answer; this one answers every request.
"""

from __future__ import annotations

import logging
import sys
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
from .lazy_store import LazyStore
from .tools import INSTRUCTIONS, TOOLS
from .transport import stdio_transport

if TYPE_CHECKING:
    from ..store import MemoryStore

SERVER_NAME = "localmem"


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


def build_server(store_factory: Callable[[], MemoryStore] | LazyStore, *, warm_up: bool = True) -> Server[Any]:
    """The MCP server (SDK ``Server``) for a store made by ``store_factory`` on first use.

    ``warm_up=False`` keeps the store closed until the first tool call.
    ``server.localmem_store`` is the :class:`LazyStore`; the store is closed
    when the server's run ends.
    """
    lazy = store_factory if isinstance(store_factory, LazyStore) else LazyStore(store_factory)

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


def run_stdio(store_factory: Callable[[], MemoryStore] | LazyStore) -> None:
    """Serve the six tools over stdin/stdout until the client disconnects (a ``LazyStore``
    whose warm-up started before this module was imported is used as it is)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                            format="localmem-mcp %(levelname)s %(message)s")
    server = build_server(store_factory)
    try:
        anyio.run(serve_stdio, server)
    finally:  # a client gone before the handshake ends no run, and no lifespan
        server.localmem_store.close()  # type: ignore[attr-defined]
