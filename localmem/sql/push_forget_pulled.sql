-- The server no longer has this memory: what pulls took of it goes with its map row.
DELETE FROM pull_seen
WHERE remote = :remote
  AND remote_id IN (SELECT remote_id FROM push_ids WHERE remote = :remote AND local_id = :local_id);
