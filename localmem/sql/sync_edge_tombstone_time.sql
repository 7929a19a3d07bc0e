-- An edge removal a sync copies keeps the time it was made on the other store, and its stamp.
INSERT INTO sync_edge_tombstones (src_id, type, dst_id, deleted_at, seq, hlc)
VALUES (:src_id, :type, :dst_id, :deleted_at, (SELECT seq FROM sync_clock WHERE id = 1), :hlc)
ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = excluded.deleted_at,
    hlc = coalesce(excluded.hlc, hlc);
