-- A deletion a sync copies keeps the time it was made on the other store, and what it deleted.
INSERT INTO sync_tombstones (id, deleted_at, seq, deleted_updated_at)
VALUES (:id, :deleted_at, (SELECT seq FROM sync_clock WHERE id = 1), :deleted_updated_at)
ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, deleted_updated_at = excluded.deleted_updated_at;
