-- The edges named in :keys (a JSON list of [src_id, type, dst_id]) as they are now: the edge
-- when it exists, else its removal (a tombstone), else neither.
SELECT k.src_id, k.type, k.dst_id,
       CASE WHEN e.src IS NULL THEN t.deleted_at END AS deleted_at,
       CASE WHEN e.src IS NULL THEN t.hlc ELSE e.hlc END AS hlc,
       e.strength, e.updated_at, e.properties
FROM (SELECT value ->> '$[0]' AS src_id, value ->> '$[1]' AS type, value ->> '$[2]' AS dst_id
      FROM json_each(:keys)) AS k
LEFT JOIN sync_edge_tombstones AS t ON t.src_id = k.src_id AND t.type = k.type AND t.dst_id = k.dst_id
LEFT JOIN memories AS a ON a.id = k.src_id
LEFT JOIN memories AS b ON b.id = k.dst_id
LEFT JOIN edges AS e ON e.src = a.pk AND e.type = k.type AND e.dst = b.pk;
