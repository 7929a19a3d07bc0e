-- For hits of kagura_near_duplicate_hits.sql (:pks, a JSON list, best first):
-- whether each is another memory of :context that is not archived, and its
-- cosine to memory :pk (NULL without a vector); in the list's order.
SELECT m.pk AS pk,
       (m.context = :context AND m.archived = 0 AND m.pk <> :pk) AS admitted,
       CASE WHEN e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, me.embedding) END AS similarity
FROM json_each(:pks) AS j
JOIN memories AS m ON m.pk = j.value
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
JOIN memory_embeddings AS me ON me.pk = :pk
ORDER BY j.key;
