-- The current (not superseded, not expired) memories captured from a session's messages
-- at or before a time, newest first: the turns a retraction may take back.
SELECT m.id, json_extract(m.metadata, '$.role'), json_extract(m.metadata, '$.message_uuid'), m.content
FROM hook_captured AS c
JOIN json_each(c.memory_ids) AS j
JOIN memories AS m ON m.id = j.value
WHERE c.session_id = :session_id
  AND m.timestamp <= :before
  AND m.t_invalid IS NULL
  AND m.archived = 0
  AND c.message_uuid != :message_uuid
ORDER BY m.timestamp DESC, json_extract(m.metadata, '$.part') DESC
LIMIT :limit;
