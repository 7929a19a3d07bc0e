SELECT id, deleted_at, purged FROM sync_tombstones WHERE id IN (SELECT value FROM json_each(:ids));
