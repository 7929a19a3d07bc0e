-- Memories deleted after :since (and not after :until), by change number, a page at a time;
-- not deletions a sync copied from :peer (sync_echo).
SELECT t.id, t.deleted_at, t.purged, t.deleted_updated_at, t.hlc, t.deleted_hlc, t.seq AS change_seq,
       (SELECT json_group_array(json_array(v.replica, v.hlc)) FROM (SELECT replica, hlc FROM sync_seen AS s
        WHERE s.id = t.id ORDER BY replica = 'floor' DESC, hlc DESC LIMIT 17) AS v) AS seen
FROM sync_tombstones AS t
WHERE t.seq > :since AND t.seq <= :until
  AND NOT EXISTS (SELECT 1 FROM sync_echo AS e
                  WHERE e.peer = :peer AND e.kind = 'd' AND e.key = t.id AND e.seq = t.seq)
ORDER BY t.seq
LIMIT :limit;
