-- Cosine of stored embeddings to the query vector, for candidates that no
-- vector search returned.
SELECT m.id, 1.0 - vec_distance_cosine(e.embedding, :query_vector) AS similarity
FROM memories AS m JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
