"""The MCP stdio servers' hold on fd 0 and fd 1 (standard library only: ``localmem mcp``'s front
end uses it before deciding whether the SDK is needed at all)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

__all__ = ["claimed_stdio"]


def _dup_private(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` above the standard descriptors."""
    if sys.platform == "win32":  # pragma: no cover
        return os.dup(fd)
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire ends of stdin and stdout, with fd 0 and 1 diverted until exit."""
    try:
        if sys.stdin.fileno() != 0 or sys.stdout.fileno() != 1:
            raise OSError("stdin/stdout are not fd 0/1")
        sys.stdout.flush()
        wire_in, wire_out = _dup_private(0), _dup_private(1)
    except (OSError, ValueError, AttributeError):  # not backed by fds: serve them in place
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        # closefd=False: a worker thread may still block reading the wire after exit.
        yield os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
