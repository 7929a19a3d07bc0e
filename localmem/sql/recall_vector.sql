-- Vector channel: cosine kNN (vector_knn), then the scope filter on the hits;
-- with the cosine of each hit to the store's mean direction (:centre, for
-- centred cosines; NULL without) from the embedding row the kNN just read.
WITH {{vector_knn}}
SELECT m.*, 1.0 - knn.distance AS similarity,
       CASE WHEN :centre IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :centre) END AS centre_cosine
FROM knn JOIN memories AS m ON m.pk = knn.pk
LEFT JOIN memory_embeddings AS e ON e.pk = knn.pk
WHERE {{scope}}
ORDER BY knn.distance;
