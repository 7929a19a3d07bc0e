-- An edge a peer could not take yet (a memory it joins had not reached that peer: a writer
-- changed it during the sync, so it waits for the next one) gets a new change number here,
-- so the next sync sends it again, after its memory: the edge's row, or its removal's.
UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
UPDATE edges SET seq = (SELECT seq FROM sync_clock WHERE id = 1)
WHERE src = (SELECT pk FROM memories WHERE id = :src_id) AND type = :type
  AND dst = (SELECT pk FROM memories WHERE id = :dst_id);
UPDATE sync_edge_tombstones SET seq = (SELECT seq FROM sync_clock WHERE id = 1)
WHERE src_id = :src_id AND type = :type AND dst_id = :dst_id;
