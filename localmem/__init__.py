"""localmem: a memory store for AI assistants in one SQLite file."""

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
