-- Schema version 16, run before migration_0016_batched_change_log.sql where the column is
-- missing (see storage/migrations.py): the first key of the batch being inserted, while it is.
ALTER TABLE sync_clock ADD COLUMN batch_from INTEGER;
