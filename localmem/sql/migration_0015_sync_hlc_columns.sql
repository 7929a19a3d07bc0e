-- Schema version 15, run before migration_0015_sync_hlc.sql where the columns are missing (see
-- storage/migrations.py): the hybrid logical clock and the stamp every change carries.
ALTER TABLE sync_clock ADD COLUMN hlc_wall INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_clock ADD COLUMN hlc_counter INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_changes ADD COLUMN hlc TEXT;
ALTER TABLE sync_tombstones ADD COLUMN hlc TEXT;
ALTER TABLE sync_tombstones ADD COLUMN deleted_hlc TEXT;
ALTER TABLE sync_edge_log ADD COLUMN hlc TEXT;
