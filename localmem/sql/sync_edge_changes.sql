-- Edges written or removed after :since (and not after :until), with the edge as it is now
-- (strength NULL: it no longer exists; deleted_at NULL too: its memory was deleted); not
-- those a sync copied from :peer (sync_echo).
SELECT l.src_id, l.type, l.dst_id, l.deleted_at, l.hlc, l.seq AS change_seq,
       e.strength, e.updated_at, e.properties
FROM sync_edge_log AS l
LEFT JOIN memories AS a ON a.id = l.src_id
LEFT JOIN memories AS b ON b.id = l.dst_id
LEFT JOIN edges AS e ON e.src = a.pk AND e.type = l.type AND e.dst = b.pk
WHERE l.seq > :since AND l.seq <= :until
  AND NOT EXISTS (SELECT 1 FROM sync_echo AS x
                  WHERE x.peer = :peer AND x.kind = 'e'
                    AND x.key = l.src_id || ' ' || l.type || ' ' || l.dst_id AND x.seq = l.seq)
ORDER BY l.seq
LIMIT :limit;
