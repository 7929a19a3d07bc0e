"""The wall-time source of the hybrid logical clock that the change-log triggers keep.

The triggers of schema 15 (``sql/migration_0015_sync_hlc.sql``) stamp every memory
change, tombstone and edge-log entry from ``sync_clock``, reading the wall time through
the SQL function ``localmem_wall_ms()``. Every connection that can write gets it: with the
system clock when opened (``connect``), and with the store's own clock (which tests pin
or skew) once a store wraps the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import apsw

WALL_FUNCTION = "localmem_wall_ms"


def system_now() -> datetime:
    return datetime.now(timezone.utc)


def wall_ms(moment: datetime) -> int:
    """A time as whole milliseconds since the Unix epoch (a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def register_wall_clock(conn: apsw.Connection, clock: Callable[[], datetime] = system_now) -> None:
    """Make ``localmem_wall_ms()`` read ``clock`` on ``conn``. Innocuous: the triggers of a peer
    file opened with ``trusted_schema`` off may call it (it reads a clock and nothing else)."""
    conn.create_scalar_function(WALL_FUNCTION, lambda: wall_ms(clock()), 0, deterministic=False,
                                flags=apsw.SQLITE_INNOCUOUS)
