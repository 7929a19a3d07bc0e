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
    """The recorded copies, oldest first; each says whether its file is still there. Then what a copy
    killed before its rename left beside it (kind ``export, unfinished``)."""
    copies = _recorded(conn, sql)
    listed = [{**c, "exists": os.path.exists(c["path"])} for c in copies]
    seen: set[str] = set()
    for copy in copies:  # a copy killed before its rename left its temporary file, with the text so far
        for leftover in unfinished(copy["path"]):
            if leftover not in seen:
                seen.add(leftover)
                listed.append({**copy, "kind": f"{copy.get('kind')}, unfinished", "path": leftover, "exists": True})
    return listed


def _recorded(conn: apsw.Connection, sql: Statements) -> list[dict[str, Any]]:
    row = conn.execute(sql["meta_get"], {"key": META_KEY}).fetchone()
    try:
        copies = json.loads(row[0]) if row else []
    except ValueError:
        copies = []
    return [c for c in copies if isinstance(c, dict) and isinstance(c.get("path"), str)]


def unfinished(path: str) -> list[str]:
    """The temporary files a backup or export of ``path`` writes beside it (``.NAME.*.tmp``) still there."""
    folder, name = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if n.startswith(f".{name}.") and n.endswith(".tmp"))


def record_copy(conn: apsw.Connection, kind: str, path: str, when: datetime | None = None) -> None:
    """Add a copy of ``kind`` (backup, export) at ``path`` to the record, in its own transaction."""
    sql = Statements()
    entry = {"kind": kind, "path": os.path.abspath(path),
             "at": format_timestamp(when or datetime.now(timezone.utc))}
    with transaction(conn):
        copies = [{k: v for k, v in c.items() if k != "exists"} for c in _recorded(conn, sql)]
        copies = (copies + [entry])[-MAX_COPIES:]
        conn.execute(sql["meta_set"], {"key": META_KEY, "value": json.dumps(copies)})
