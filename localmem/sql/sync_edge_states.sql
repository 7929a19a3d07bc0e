-- The edges named in :keys (a JSON list of [src_id, type, dst_id]) as they are now.
SELECT k.value ->> '$[0]' AS src_id, k.value ->> '$[1]' AS type, k.value ->> '$[2]' AS dst_id,
       l.deleted_at, l.hlc, e.strength, e.updated_at, e.properties
FROM json_each(:keys) AS k
LEFT JOIN sync_edge_log AS l
       ON l.src_id = k.value ->> '$[0]' AND l.type = k.value ->> '$[1]' AND l.dst_id = k.value ->> '$[2]'
LEFT JOIN memories AS a ON a.id = k.value ->> '$[0]'
LEFT JOIN memories AS b ON b.id = k.value ->> '$[2]'
LEFT JOIN edges AS e ON e.src = a.pk AND e.type = k.value ->> '$[1]' AND e.dst = b.pk;
