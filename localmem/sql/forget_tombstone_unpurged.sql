-- Whether :id was deleted here (a sync tombstone) and not yet purged: a peer's trash may still hold it.
SELECT 1 FROM sync_tombstones WHERE id = :id AND purged = 0;
