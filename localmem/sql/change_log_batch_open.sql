-- New memories from key :first on are logged by change_log_batch_close, not row by row by
-- memory_changes_insert (migration 0016).
UPDATE sync_clock SET batch_from = :first WHERE id = 1;
