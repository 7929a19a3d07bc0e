-- Memories the remote does not have (no id-map row), with their change
-- counter and embedding, in insertion order, a page at a time.
SELECT m.*, c.seq AS change_seq, e.embedding AS embedding
FROM memories AS m
JOIN memory_changes AS c ON c.pk = m.pk
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE m.pk > :after
  AND NOT EXISTS (SELECT 1 FROM push_ids AS p WHERE p.remote = :remote AND p.local_id = m.id)
  {{scope}}
ORDER BY m.pk
LIMIT :limit;
