-- Memories changed after :since (and not after :until), by change number, a page at a time;
-- not those a sync wrote from :peer and nothing changed since (sync_echo).
SELECT c.seq AS change_seq, c.hlc AS hlc, m.*,
       (SELECT json_group_array(json_array(v.replica, v.hlc)) FROM (SELECT replica, hlc FROM sync_seen AS s
        WHERE s.id = m.id ORDER BY replica = 'floor' DESC, hlc DESC LIMIT 17) AS v) AS seen
FROM memory_changes AS c JOIN memories AS m ON m.pk = c.pk
WHERE c.seq > :since AND c.seq <= :until
  AND NOT EXISTS (SELECT 1 FROM sync_echo AS e
                  WHERE e.peer = :peer AND e.kind = 'm' AND e.key = m.id AND e.seq = c.seq)
ORDER BY c.seq
LIMIT :limit;
