-- The rows of keyword hits (:pks, a JSON list) that Kagura's scope admits, with
-- their cosine to the query vector (NULL without one) from the plain embedding copy.
SELECT m.*,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity
FROM json_each(:pks) AS j
JOIN memories AS m ON m.pk = j.value
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE {{kagura_scope_filter}};
