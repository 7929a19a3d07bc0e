-- Semantic arm with the scope (contexts, type, scope, tags) pushed into the
-- kNN as a pk IN (...) pre-filter, so :k rows come back whenever :k match.
WITH knn AS MATERIALIZED (
    SELECT pk, distance FROM memory_vectors
    WHERE embedding MATCH :query_vector AND k = :k
      AND pk IN (SELECT m.pk FROM memories AS m WHERE {{kagura_scope_filter}})
)
SELECT m.*, 1.0 - knn.distance AS similarity, 1 AS in_scope
FROM knn JOIN memories AS m ON m.pk = knn.pk
ORDER BY knn.distance;
