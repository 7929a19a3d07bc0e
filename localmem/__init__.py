"""localmem: a memory store for AI assistants in one SQLite file.

The public names load on first use (PEP 562), so ``import localmem`` stays
cheap for callers that need little of it (``localmem hook`` answers on every
prompt of an assistant and must start fast); ``from localmem import
MemoryStore`` works as before.
"""

from __future__ import annotations

import importlib

# typing.TYPE_CHECKING without importing typing (a few ms of every hook's start); type
# checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .config import Config
    from .errors import AuthError, ConfigError, LocalMemError, NotFoundError, StorageError, ValidationError
    from .store import MemoryStore

__all__ = [
    "AuthError",
    "Config",
    "ConfigError",
    "LocalMemError",
    "MemoryStore",
    "NotFoundError",
    "StorageError",
    "ValidationError",
]
__version__ = "0.1.0"

# public name -> the submodule that defines it
_PUBLIC = {
    "AuthError": "errors",
    "Config": "config",
    "ConfigError": "errors",
    "LocalMemError": "errors",
    "MemoryStore": "store",
    "NotFoundError": "errors",
    "StorageError": "errors",
    "ValidationError": "errors",
}


def __getattr__(name: str) -> Any:
    module_name = _PUBLIC.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(f".{module_name}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name.isidentifier() and not name.startswith("__"):
        # ``localmem.store`` and friends after a bare ``import localmem``, as when the
        # package imported them eagerly.
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
