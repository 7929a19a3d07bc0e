-- Semantic arm within a scope (contexts, type, scope, tags): the exact cosine
-- of the memories in scope, best first, so :k rows come back whenever :k match.
SELECT m.*, 1.0 - vec_distance_cosine(e.embedding, :query_vector) AS similarity, 1 AS in_scope
FROM memories AS m
JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE {{kagura_scope_filter}}
ORDER BY similarity DESC
LIMIT :k;
