-- Export: every memory with its canonical float32 embedding (NULL when it has
-- none), in insertion order, so a re-import keeps the same order.
SELECT m.*, e.embedding AS embedding
FROM memories AS m
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
ORDER BY m.pk;
