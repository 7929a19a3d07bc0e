-- Schema version 14: the trash. A memory that sync, pull or a merge deletes is kept here
-- first, with its edges, restorable for 30 days (`localmem trash`). A purge is the one
-- deletion that bypasses it; a purged memory's tombstone says so, so peers purge it too.

CREATE TABLE IF NOT EXISTS trash (
    id         TEXT PRIMARY KEY,           -- the memory's id
    record     TEXT NOT NULL,              -- the memory record as JSON
    edges      TEXT NOT NULL DEFAULT '[]', -- JSON [[src_id, type, dst_id, strength, updated_at, properties]]
    reason     TEXT NOT NULL,              -- what deleted it ("sync with ...", "pull from ...")
    trashed_at TEXT NOT NULL               -- UTC ISO 8601: sorts as text
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS trash_trashed_at ON trash (trashed_at);

-- The tombstones' two new columns (purged, deleted_updated_at): migration_0014_tombstone_columns.sql,
-- added only where missing (a store whose version number was rolled back migrates again).


DROP TRIGGER IF EXISTS sync_tombstone_on_delete;
CREATE TRIGGER sync_tombstone_on_delete AFTER DELETE ON memories
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    INSERT INTO sync_tombstones (id, deleted_at, seq, purged, deleted_updated_at)
    VALUES (old.id, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00',
            (SELECT seq FROM sync_clock WHERE id = 1), 0, old.updated_at)
    ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, seq = excluded.seq,
        deleted_updated_at = excluded.deleted_updated_at;
END;
