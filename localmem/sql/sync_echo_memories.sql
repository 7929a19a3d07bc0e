-- Note the memories (:ids, a JSON list) a sync just wrote from :peer, at their change numbers.
INSERT INTO sync_echo (peer, kind, key, seq)
SELECT :peer, 'm', m.id, c.seq
FROM memories AS m JOIN memory_changes AS c ON c.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids))
ON CONFLICT (peer, kind, key) DO UPDATE SET seq = excluded.seq;
