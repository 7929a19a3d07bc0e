-- Vector channel for tag- or time-scoped recall: the scope is pushed into
-- the kNN as a pre-filter (vector_knn_scoped).
WITH {{vector_knn_scoped}}
SELECT m.*, 1.0 - knn.distance AS similarity
FROM knn JOIN memories AS m ON m.pk = knn.pk
ORDER BY knn.distance;
