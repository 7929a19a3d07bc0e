-- Semantic arm without a pre-filter (the scope is every context and no
-- filter is set): the code kNN (vector_knn); every neighbour comes back with
-- its cosine and whether it passes the scope, so the caller knows the cut-off.
WITH {{vector_knn}}
SELECT m.*, 1.0 - knn.distance AS similarity, ({{kagura_scope_filter}}) AS in_scope
FROM knn JOIN memories AS m ON m.pk = knn.pk
ORDER BY knn.distance;
