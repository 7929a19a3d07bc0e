-- Memories without an embedding (invisible to the vector channel).
SELECT m.pk, m.id, m.content FROM memories AS m
WHERE NOT EXISTS (SELECT 1 FROM memory_embeddings AS e WHERE e.pk = m.pk)
ORDER BY m.pk;
