SELECT id, version FROM sync_base WHERE peer = :peer AND id IN (SELECT value FROM json_each(:ids));
