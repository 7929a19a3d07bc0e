"""localmem's MCP server: AutoMem's six memory tools over stdio (``localmem mcp``).

``build_server(store_factory)`` and ``run_stdio(store_factory)`` live in
:mod:`localmem.mcp_server.server` and are loaded on first access, so importing
this package (or its SDK-free ``formatting``, ``tools`` and ``handlers``
modules) neither needs the ``mcp`` extra nor imports torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_server", "run_stdio"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
