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
import os
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
from .lazy_store import WARM_UP_JOIN_SECONDS, LazyStore
from .tools import INSTRUCTIONS, TOOLS
from .transport import stdio_transport

# How long a client's disconnect waits for a warm-up still loading the model before the
# process ends without it (exit_while_warming): the SDK's stdio client SIGTERMs at 2 s.
DISCONNECT_WAIT_SECONDS = 1.0

log = logging.getLogger("localmem.mcp")

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


def build_server(store_factory: Callable[[], MemoryStore] | LazyStore, *, warm_up: bool = True,
                 close_wait: float = WARM_UP_JOIN_SECONDS, owns_store: bool = True) -> Server[Any]:
    """The MCP server (SDK ``Server``) for a store made by ``store_factory`` on first use.

    ``warm_up=False`` keeps the store closed until the first tool call.
    ``server.localmem_store`` is the :class:`LazyStore`; the store is closed
    when the server's run ends, once a warm-up still loading has finished (waiting
    up to ``close_wait`` seconds; after that it is left open to whoever closes it).
    ``owns_store=False`` leaves it open: the store belongs to someone else
    (``localmem serve``, whose HTTP API shares it).
    """
    lazy = store_factory if isinstance(store_factory, LazyStore) else LazyStore(store_factory)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            if owns_store:
                lazy.close(wait=close_wait)

    def start_warm_up() -> None:
        if warm_up and not lazy.forwarding:  # the warm process answers: nothing to open here
            lazy.start_warm_up()

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start_warm_up()
        return types.ListToolsResult(tools=tool_definitions())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        output = await anyio.to_thread.run_sync(lazy.call, call_tool, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=text) for text in output.texts],
            structured_content=output.structured,
            is_error=output.is_error,
        )

    async def on_initialized(ctx: Any, params: types.NotificationParams | None) -> None:
        start_warm_up()

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
    whose warm-up started before this module was imported is used as it is).

    A process's main: when the client leaves while the warm-up is still loading the model,
    the process ends here (``exit_while_warming``) instead of returning."""
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                            format="localmem-mcp %(levelname)s %(message)s")
    server = build_server(store_factory, close_wait=0)  # the wait, if any, is below: off the event loop
    code = 0
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        code = 130
        raise
    finally:  # a client gone before the handshake ends no run, and no lifespan
        if not server.localmem_store.close(wait=DISCONNECT_WAIT_SECONDS):  # type: ignore[attr-defined]
            exit_while_warming(code)


def exit_while_warming(code: int) -> None:
    """End the process at once, while the warm-up thread is still loading the model.

    The client is gone, and waiting longer gets this process SIGTERMed (the SDK's stdio
    client does so 2 s after closing our stdin); a normal interpreter exit would tear down
    the loader's native threads mid-load (std::terminate: SIGABRT). ``os._exit`` runs no
    finalization; everything a tool call wrote is committed already, and a store still
    being opened is left as SQLite leaves any interrupted open: recoverable.
    """
    log.info("client disconnected while the model was loading; exiting without waiting for it")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
