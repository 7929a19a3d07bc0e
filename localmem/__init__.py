"""localmem: a memory store for AI assistants in one SQLite file."""

from .config import Config
from .errors import AuthError, ConfigError, LocalMemError, NotFoundError, ValidationError
from .store import MemoryStore

__all__ = [
    "AuthError",
    "Config",
    "ConfigError",
    "LocalMemError",
    "MemoryStore",
    "NotFoundError",
    "ValidationError",
]
__version__ = "0.1.0"
