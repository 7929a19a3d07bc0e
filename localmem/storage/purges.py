"""The purge record: which memory ids ``localmem forget`` purged, and when (no content).

``record_purged`` is the one function forget calls to leave what sync needs:
a peer that sees the id in ``purged_since`` should scrub its copy, not keep
an edit of it (docs/privacy.md). Push needs nothing more: a memory pushed
before and missing now is deleted on the server at the next push.
"""

from __future__ import annotations

import json

import apsw

from .statements import Statements

MAX_LISTED = 10_000  # per call of purged_since: a sync pages by time


def record_purged(conn: apsw.Connection, sql: Statements, ids: list[str], purged_at: str) -> None:
    """Note ``ids`` as purged at ``purged_at`` and drop their push and pull field hashes (in the
    caller's transaction)."""
    if ids:
        conn.execute(sql["forget_purge_record"], {"ids": json.dumps(ids), "purged_at": purged_at})
        conn.execute(sql["forget_pull_seen_clear"], {"ids": json.dumps(ids)})
        conn.execute(sql["forget_push_hashes_clear"], {"ids": json.dumps(ids)})


def purged_since(conn: apsw.Connection, sql: Statements, since: str = "",
                 limit: int = MAX_LISTED) -> list[dict[str, str]]:
    """Purges at or after ``since`` (ISO 8601; "" for all), oldest first, at most ``limit``."""
    rows = conn.execute(sql["forget_purges_list"], {"since": since, "limit": min(limit, MAX_LISTED)})
    return [{"id": memory_id, "purged_at": when} for memory_id, when in rows]
