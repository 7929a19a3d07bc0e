"""localmem's HTTP API: AutoMem-compatible routes over a MemoryStore.

Needs the ``server`` extra (starlette, uvicorn). Nothing is imported from
them until ``create_app`` or ``serve`` is used, so ``import localmem.http``
works with the core dependencies only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "serve":
        from .server import serve

        return serve
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
