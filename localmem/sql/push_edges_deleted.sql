-- Edges :remote has that were removed here since; ends_exist is 0 when a
-- memory at either end was deleted (the server drops the edge with it).
SELECT pe.src_id AS src_id, pe.type AS type, pe.dst_id AS dst_id,
       ps.remote_id AS src_remote, pd.remote_id AS dst_remote,
       (s.pk IS NOT NULL AND d.pk IS NOT NULL) AS ends_exist
FROM push_edges AS pe
LEFT JOIN memories AS s ON s.id = pe.src_id
LEFT JOIN memories AS d ON d.id = pe.dst_id
LEFT JOIN push_ids AS ps ON ps.remote = pe.remote AND ps.local_id = pe.src_id
LEFT JOIN push_ids AS pd ON pd.remote = pe.remote AND pd.local_id = pe.dst_id
WHERE pe.remote = :remote
  AND NOT EXISTS (SELECT 1 FROM edges AS e WHERE e.src = s.pk AND e.type = pe.type AND e.dst = d.pk);
