-- Vector channel for a narrow scope: the exact cosine of every memory in
-- scope (cheaper than a filtered kNN when few memories qualify).
SELECT m.*, 1.0 - vec_distance_cosine(e.embedding, :query_vector) AS similarity
FROM memories AS m
JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE {{scope}}
ORDER BY similarity DESC
LIMIT :k;
