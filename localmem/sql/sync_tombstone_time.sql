-- A deletion a sync copies keeps the time it was made on the other store.
INSERT INTO sync_tombstones (id, deleted_at, seq)
VALUES (:id, :deleted_at, (SELECT seq FROM sync_clock WHERE id = 1))
ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at;
