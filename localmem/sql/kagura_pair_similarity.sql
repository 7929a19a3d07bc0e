-- Cosines between two sets of memories (by pk) at or above :threshold.
SELECT a.value AS left_pk, b.value AS right_pk,
       1.0 - vec_distance_cosine(ea.embedding, eb.embedding) AS similarity
FROM json_each(:left) AS a
JOIN memory_embeddings AS ea ON ea.pk = a.value
JOIN json_each(:right) AS b ON b.value <> a.value
JOIN memory_embeddings AS eb ON eb.pk = b.value
WHERE 1.0 - vec_distance_cosine(ea.embedding, eb.embedding) >= :threshold;
