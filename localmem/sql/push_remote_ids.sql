-- The server's ids of some local memories (those it has).
SELECT local_id, remote_id FROM push_ids
WHERE remote = :remote AND remote_id IS NOT NULL
  AND local_id IN (SELECT value FROM json_each(:ids));
