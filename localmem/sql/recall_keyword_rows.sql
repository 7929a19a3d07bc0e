-- The rows of the keyword channel's hits (:pks, a JSON list) within the
-- scope, with their cosine to the query vector from the plain embedding copy,
-- and to the store's mean direction (:centre, for centred cosines; NULL without).
SELECT m.*,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity,
       CASE WHEN :centre IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :centre) END AS centre_cosine
FROM json_each(:pks) AS j
JOIN memories AS m ON m.pk = j.value
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE {{scope}};
