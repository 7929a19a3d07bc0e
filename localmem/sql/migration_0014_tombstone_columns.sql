-- Schema version 14, run before migration_0014_trash.sql where the columns are missing (see
-- storage/migrations.py): what a sync tombstone needs to decide and carry a deletion.

ALTER TABLE sync_tombstones ADD COLUMN purged INTEGER NOT NULL DEFAULT 0;

-- A tombstone keeps the updated_at of the version it deleted: a record is decided against the
-- deletion by that (the deleted version or older: the delete wins; edited after it: the edit
-- survives), the same on every store, rather than by comparing two machines' clocks.
ALTER TABLE sync_tombstones ADD COLUMN deleted_updated_at TEXT;
