-- Semantic arm within a scope narrowed by tags or contexts: the code kNN among the
-- memories an index listed (vector_knn), the rest of the scope checked on the
-- neighbours, the nearest :size in scope.
WITH {{vector_knn}}
SELECT m.*, 1.0 - knn.distance AS similarity, 1 AS in_scope
FROM knn JOIN memories AS m ON m.pk = knn.pk
WHERE {{kagura_scope_filter}}
ORDER BY knn.distance
LIMIT :size;
