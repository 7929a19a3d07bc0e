"""A store's identity survives copies: a byte copy of the file takes a new one when opened.

A store's identity (meta ``store_id``) is its replica id: what its sync peers keep their
"sent up to change N" marks under, and the last part of every clock stamp it writes. Two
files must never share one. ``localmem backup`` and ``restore`` renew it themselves; a copy
made outside localmem (``cp``, a file-sync tool, a disk image) is caught here: the file
records where it lives (``store_home``: the device and inode number of the database file),
and a writable open that finds itself somewhere else is a copy, so it renews the identity
(and so starts its stamps and its peers' marks afresh) before anything is written or synced.

Cost per writable open: one ``stat`` and one meta row read; a transaction only when the
home changed. A read-only open checks nothing and writes nothing (it cannot write, and it
neither syncs nor stamps: a dry-run sync of an unopened copy reports as its original would).
A store moved to another filesystem (a new inode) is taken for a copy too, which costs one
full comparison at its next sync with each peer and loses nothing. Renewing drops the
recorded home (``sync_store_id_renew.sql``), so the next open records the new one.
"""

from __future__ import annotations

import os

import apsw

from .database import MEMORY_PATH, transaction
from .statements import Statements

HOME_KEY = "store_home"


def file_home(path: str) -> str:
    """Where a database file lives: its device and inode number."""
    status = os.stat(path)
    return f"{status.st_dev}:{status.st_ino}"


def claim_home(conn: apsw.Connection, sql: Statements, path: str) -> bool:
    """Record where the file at ``path`` lives; a file that recorded another place is a copy: it
    takes a new identity. Returns whether it did."""
    if path == MEMORY_PATH:
        return False
    here = file_home(path)
    row = conn.execute(sql["meta_get"], {"key": HOME_KEY}).fetchone()
    if row is not None and row[0] == here:
        return False
    with transaction(conn):  # read again under the write lock: two openers of one copy renew once
        row = conn.execute(sql["meta_get"], {"key": HOME_KEY}).fetchone()
        if row is not None and row[0] == here:
            return False
        copied = row is not None
        if copied:
            conn.execute(sql["sync_store_id_renew"])
        conn.execute(sql["meta_set"], {"key": HOME_KEY, "value": here})
    return copied
