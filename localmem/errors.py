"""Error types of the public contract.

Every error carries an HTTP-style status ``code`` and renders as the
AutoMem error envelope ``{"status": "error", "code": N, "message": "..."}``.
"""

from __future__ import annotations

from typing import Any


class LocalMemError(Exception):
    """Base class of every error localmem raises on purpose."""

    code: int = 500

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        return {"status": "error", "code": self.code, "message": self.message}


class ValidationError(LocalMemError, ValueError):
    """The caller sent something invalid (HTTP 400). Nothing was changed."""

    code = 400


class NotFoundError(LocalMemError, KeyError):
    """The named memory (or context) does not exist (HTTP 404)."""

    code = 404

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class AuthError(LocalMemError):
    """Missing or wrong API token (HTTP 401)."""

    code = 401


class ConfigError(LocalMemError):
    """The store cannot be opened as configured (500-class, raised at open)."""

    code = 500


class StorageError(LocalMemError):
    """The file could not take the operation: disk full, read-only, locked too long, I/O error.

    503 (507 for a full disk). The transaction was rolled back, so the file
    holds exactly what it held before the call.
    """

    code = 503


class AmbiguousIdError(ValidationError):
    """An id prefix matches more than one memory (HTTP 400); ``candidates`` lists some of them."""

    def __init__(self, message: str, *, candidates: list[str], more: bool = False) -> None:
        super().__init__(message)
        self.candidates = candidates
        self.more = more
