"""Where the store's text was copied to: backups and exports, recorded in meta when made.

``localmem forget`` lists them (a copy made before a purge still holds the
purged text, and no command of this store can reach it). Kept under the meta
key ``copies_made`` as a JSON list of ``{"kind", "path", "at"}``, the newest
``MAX_COPIES`` only.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any

import apsw

from ..storage.database import transaction
from ..storage.statements import Statements
from ..timeparse import format_timestamp

META_KEY = "copies_made"
MAX_COPIES = 200


def list_copies(conn: apsw.Connection, sql: Statements) -> list[dict[str, Any]]:
    """The recorded copies, oldest first; each says whether its file is still there."""
    row = conn.execute(sql["meta_get"], {"key": META_KEY}).fetchone()
    try:
        copies = json.loads(row[0]) if row else []
    except ValueError:
        copies = []
    copies = [c for c in copies if isinstance(c, dict) and isinstance(c.get("path"), str)]
    return [{**c, "exists": os.path.exists(c["path"])} for c in copies]


def record_copy(conn: apsw.Connection, kind: str, path: str, when: datetime | None = None) -> None:
    """Add a copy of ``kind`` (backup, export) at ``path`` to the record, in its own transaction."""
    sql = Statements()
    entry = {"kind": kind, "path": os.path.abspath(path),
             "at": format_timestamp(when or datetime.now(timezone.utc))}
    with transaction(conn):
        copies = [{k: v for k, v in c.items() if k != "exists"} for c in list_copies(conn, sql)]
        copies = (copies + [entry])[-MAX_COPIES:]
        conn.execute(sql["meta_set"], {"key": META_KEY, "value": json.dumps(copies)})
