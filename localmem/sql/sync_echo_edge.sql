-- Note an edge (or its removal) a sync just copied from :peer, at the change number it got here.
INSERT INTO sync_echo (peer, kind, key, seq)
SELECT :peer, 'e', :src_id || ' ' || :type || ' ' || :dst_id, n.seq
FROM (SELECT e.seq FROM memories AS a JOIN edges AS e ON e.src = a.pk JOIN memories AS b ON b.pk = e.dst
      WHERE a.id = :src_id AND e.type = :type AND b.id = :dst_id
      UNION ALL
      SELECT t.seq FROM sync_edge_tombstones AS t
      WHERE t.src_id = :src_id AND t.type = :type AND t.dst_id = :dst_id
      LIMIT 1) AS n
WHERE n.seq IS NOT NULL
ON CONFLICT (peer, kind, key) DO UPDATE SET seq = excluded.seq;
