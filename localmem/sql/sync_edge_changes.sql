-- Edges written or removed after :since (and not after :until), with the edge as it is now
-- (strength NULL: it no longer exists; deleted_at NULL too: its memory was deleted before schema
-- 15 logged that); not those a sync copied from :peer (sync_echo). Each arm reads its own seq
-- index in order and the two are merged, so a page reads about :limit rows of each. A removal
-- whose edge exists again (schema 19: its tombstone is stale) is not a change.
SELECT a.id AS src_id, e.type, b.id AS dst_id, NULL AS deleted_at, e.hlc, e.seq AS change_seq,
       e.strength, e.updated_at, e.properties
FROM edges AS e
JOIN memories AS a ON a.pk = e.src
JOIN memories AS b ON b.pk = e.dst
WHERE e.seq > :since AND e.seq <= :until
  AND NOT EXISTS (SELECT 1 FROM sync_echo AS x
                  WHERE x.peer = :peer AND x.kind = 'e'
                    AND x.key = a.id || ' ' || e.type || ' ' || b.id AND x.seq = e.seq)
UNION ALL
SELECT t.src_id, t.type, t.dst_id, t.deleted_at, t.hlc, t.seq AS change_seq, NULL, NULL, NULL
FROM sync_edge_tombstones AS t
WHERE t.seq > :since AND t.seq <= :until
  AND NOT EXISTS (SELECT 1 FROM memories AS a JOIN edges AS e ON e.src = a.pk
                  JOIN memories AS b ON b.pk = e.dst
                  WHERE a.id = t.src_id AND e.type = t.type AND b.id = t.dst_id)
  AND NOT EXISTS (SELECT 1 FROM sync_echo AS x
                  WHERE x.peer = :peer AND x.kind = 'e'
                    AND x.key = t.src_id || ' ' || t.type || ' ' || t.dst_id AND x.seq = t.seq)
ORDER BY change_seq
LIMIT :limit;
