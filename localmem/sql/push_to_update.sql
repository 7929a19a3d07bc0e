-- Memories the remote has in an older version (their counter moved since
-- they were sent), with what the remote was sent, a page at a time.
SELECT m.*, c.seq AS change_seq, e.embedding AS embedding,
       p.remote_id AS remote_id, p.fields AS pushed_fields
FROM push_ids AS p
JOIN memories AS m ON m.id = p.local_id
JOIN memory_changes AS c ON c.pk = m.pk
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE p.remote = :remote AND p.remote_id IS NOT NULL AND c.seq > p.pushed_seq
  AND m.pk > :after
  {{scope}}
ORDER BY m.pk
LIMIT :limit;
