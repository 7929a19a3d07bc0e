-- Note the deletions (:ids, a JSON list) a sync just copied from :peer.
INSERT INTO sync_echo (peer, kind, key, seq)
SELECT :peer, 'd', t.id, t.seq
FROM sync_tombstones AS t
WHERE t.id IN (SELECT value FROM json_each(:ids))
ON CONFLICT (peer, kind, key) DO UPDATE SET seq = excluded.seq;
