-- Schema version 13: what `localmem forget` purged, by id and time, for sync to carry.
-- An id and a time only: the content is gone (docs/privacy.md). A sync reads it to
-- mark its tombstones as purges, so a peer scrubs the memory instead of keeping an edit.
CREATE TABLE IF NOT EXISTS forget_purges (
    id        TEXT PRIMARY KEY,
    purged_at TEXT NOT NULL
) WITHOUT ROWID;
