-- What a sync merged of each memory joins what this store had seen of it (:rows, a JSON list
-- of [id, replica, stamp], each id's summary already capped; replication/seen.py): per
-- replica the later stamp, then entries at or under an id's floor go (the floor covers them).
INSERT INTO sync_seen (id, replica, hlc)
SELECT r.value ->> '$[0]', r.value ->> '$[1]', r.value ->> '$[2]' FROM json_each(:rows) AS r WHERE true
ON CONFLICT (id, replica) DO UPDATE SET hlc = max(hlc, excluded.hlc);
DELETE FROM sync_seen
WHERE id IN (SELECT r.value ->> '$[0]' FROM json_each(:rows) AS r WHERE r.value ->> '$[1]' = 'floor')
  AND replica <> 'floor'
  AND hlc <= (SELECT f.hlc FROM sync_seen AS f WHERE f.id = sync_seen.id AND f.replica = 'floor');
