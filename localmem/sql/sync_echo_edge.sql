-- Note an edge (or its removal) a sync just copied from :peer.
INSERT INTO sync_echo (peer, kind, key, seq)
SELECT :peer, 'e', l.src_id || ' ' || l.type || ' ' || l.dst_id, l.seq
FROM sync_edge_log AS l
WHERE l.src_id = :src_id AND l.type = :type AND l.dst_id = :dst_id
ON CONFLICT (peer, kind, key) DO UPDATE SET seq = excluded.seq;
