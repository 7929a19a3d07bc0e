-- Memories :remote has that were deleted here since.
SELECT p.local_id AS local_id, p.remote_id AS remote_id
FROM push_ids AS p
WHERE p.remote = :remote AND p.remote_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = p.local_id)
ORDER BY p.local_id;
