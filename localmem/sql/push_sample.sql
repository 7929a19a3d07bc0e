-- A random sample of the memories :remote has, for --verify.
SELECT m.*, p.remote_id AS remote_id, e.embedding AS embedding
FROM push_ids AS p
JOIN memories AS m ON m.id = p.local_id
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE p.remote = :remote AND p.remote_id IS NOT NULL {{scope}}
ORDER BY random()
LIMIT :limit;
