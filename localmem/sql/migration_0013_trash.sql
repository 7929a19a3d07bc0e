-- Schema version 13: the trash. A memory that sync, pull or a merge deletes is kept here
-- first, with its edges, restorable for 30 days (`localmem trash`). A purge is the one
-- deletion that bypasses it; a purged memory's tombstone says so, so peers purge it too.

CREATE TABLE trash (
    id         TEXT PRIMARY KEY,           -- the memory's id
    record     TEXT NOT NULL,              -- the memory record as JSON
    edges      TEXT NOT NULL DEFAULT '[]', -- JSON [[src_id, type, dst_id, strength, updated_at, properties]]
    reason     TEXT NOT NULL,              -- what deleted it ("sync with ...", "pull from ...")
    trashed_at TEXT NOT NULL               -- UTC ISO 8601: sorts as text
) WITHOUT ROWID;
CREATE INDEX trash_trashed_at ON trash (trashed_at);

ALTER TABLE sync_tombstones ADD COLUMN purged INTEGER NOT NULL DEFAULT 0;
