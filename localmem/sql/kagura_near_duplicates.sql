-- The nearest neighbours of one memory's vector within its own context
-- (vec0 kNN with a pre-filter), at or above :threshold.
WITH knn AS MATERIALIZED (
    SELECT pk, distance FROM memory_vectors
    WHERE embedding MATCH :vector AND k = :k
      AND pk IN (SELECT m.pk FROM memories AS m WHERE m.context = :context AND m.archived = 0)
)
SELECT knn.pk AS pk, 1.0 - knn.distance AS similarity
FROM knn
WHERE knn.pk <> :pk AND 1.0 - knn.distance >= :threshold
ORDER BY knn.distance;
