-- Cosine of stored embeddings (by pk) to the query vector.
SELECT e.pk, 1.0 - vec_distance_cosine(e.embedding, :query_vector) AS similarity
FROM memory_embeddings AS e
WHERE e.pk IN (SELECT value FROM json_each(:pks));
