-- Mark a deletion purged (forget, trash.purge, or a purge a sync brought here). The mark is a
-- change of its own: it takes a new change number, so the next sync with each peer, which reads
-- the changes since the last one, carries it on. (A deletion synced before, of a memory left only
-- in a trash, kept its old number, and the mark never travelled.)
UPDATE sync_clock SET seq = seq + 1
WHERE id = 1 AND EXISTS (SELECT 1 FROM sync_tombstones WHERE id = :id AND purged = 0);
UPDATE sync_tombstones SET purged = 1, seq = (SELECT seq FROM sync_clock WHERE id = 1)
WHERE id = :id AND purged = 0;
