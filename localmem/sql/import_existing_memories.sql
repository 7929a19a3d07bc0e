-- Import: the memories among the given public ids that already exist, with
-- their canonical embedding (NULL when they have none).
SELECT m.*, e.embedding AS embedding
FROM memories AS m
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
