-- A deletion a sync copies keeps the time it was made on the other store, what it deleted, and
-- both their clock stamps (a peer of an older version sends none: the local stamps stay).
INSERT INTO sync_tombstones (id, deleted_at, seq, deleted_updated_at, hlc, deleted_hlc)
VALUES (:id, :deleted_at, (SELECT seq FROM sync_clock WHERE id = 1), :deleted_updated_at, :hlc, :deleted_hlc)
ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, deleted_updated_at = excluded.deleted_updated_at,
    hlc = coalesce(excluded.hlc, hlc), deleted_hlc = coalesce(excluded.deleted_hlc, deleted_hlc);
