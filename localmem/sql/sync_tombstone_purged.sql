UPDATE sync_tombstones SET purged = 1 WHERE id = :id;
