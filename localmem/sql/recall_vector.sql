-- Vector channel: cosine kNN (vector_knn), then the scope filter on the hits.
WITH {{vector_knn}}
SELECT m.*, 1.0 - knn.distance AS similarity
FROM knn JOIN memories AS m ON m.pk = knn.pk
WHERE {{scope}}
ORDER BY knn.distance;
