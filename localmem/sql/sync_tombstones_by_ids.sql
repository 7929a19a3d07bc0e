SELECT id, deleted_at, purged, deleted_updated_at, hlc, deleted_hlc FROM sync_tombstones WHERE id IN (SELECT value FROM json_each(:ids));
