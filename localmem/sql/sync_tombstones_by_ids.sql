SELECT id, deleted_at, purged, deleted_updated_at FROM sync_tombstones WHERE id IN (SELECT value FROM json_each(:ids));
