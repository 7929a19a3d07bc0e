SELECT value FROM meta WHERE key = 'store_id';
