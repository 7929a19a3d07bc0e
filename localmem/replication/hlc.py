"""Hybrid logical clock stamps, as the change-log triggers write them (schema 15).

A stamp is ``'WWWWWWWWWWWWWWW-CCCCCCCCCC-REPLICA'``: wall time in milliseconds, a logical
counter, and the store identity of the replica that made the change. The clock only moves
forward: each change takes the later of the clock's wall time and now (the counter reset
when now is later, else one more), and a stamp received from a peer moves it past that stamp
(the max rule), so a change made after seeing another always orders after it, whatever the
two machines' clocks read. Stamps compare in the order (wall, counter, replica).

A skewed clock is bounded: a stamp whose wall time is more than ``MAX_SKEW_MS`` (24 hours)
ahead of this machine's clock neither drags this store's clock nor orders anything: when a
merge compares it, it counts as the earliest stamp (so a far-future or broken clock never
wins a merge; what it loses is kept as a conflict copy or in the trash). A memory's
``updated_at`` plays no part in the order at all: a 9999 ``updated_at`` orders nothing.
"""

from __future__ import annotations

import re

MAX_SKEW_MS = 24 * 3600 * 1000
STAMP = re.compile(r"(\d{15})-(\d{10})-([0-9a-f]{32})")
EARLIEST = (0, 0, "")


def stamp_key(stamp: str | None, horizon_ms: int | None) -> tuple[int, int, str] | None:
    """A stamp as (wall, counter, replica); ``EARLIEST`` for one whose wall time is past
    ``horizon_ms`` (now plus the bounded skew, on the store that compares); None: no stamp
    (a change from a peer too old to send one) or not a stamp."""
    if not stamp:
        return None
    found = STAMP.fullmatch(stamp)
    if found is None:
        return None
    wall = int(found[1])
    if horizon_ms is not None and wall > horizon_ms:
        return EARLIEST
    return wall, int(found[2]), found[3]


def valid_stamp(value: object) -> bool:
    return isinstance(value, str) and STAMP.fullmatch(value) is not None
