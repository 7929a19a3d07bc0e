-- Vector channel: kNN over vec0, then the scope filter on the hits.
WITH knn AS MATERIALIZED (
    SELECT pk, distance FROM memory_vectors
    WHERE embedding MATCH :query_vector AND k = :k
)
SELECT m.*, 1.0 - knn.distance AS similarity
FROM knn JOIN memories AS m ON m.pk = knn.pk
WHERE {{recall_scope_filter}}
ORDER BY knn.distance;
