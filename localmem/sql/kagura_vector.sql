-- Semantic arm without a pre-filter (the scope is every context and no
-- filter is set): kNN over vec0; every neighbour comes back with its cosine
-- and whether it passes the scope, so the caller knows the kNN cut-off.
WITH knn AS MATERIALIZED (
    SELECT pk, distance FROM memory_vectors
    WHERE embedding MATCH :query_vector AND k = :k
)
SELECT m.*, 1.0 - knn.distance AS similarity, ({{kagura_scope_filter}}) AS in_scope
FROM knn JOIN memories AS m ON m.pk = knn.pk
ORDER BY knn.distance;
