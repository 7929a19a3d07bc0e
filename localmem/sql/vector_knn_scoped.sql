-- Fragment: as vector_knn, with the recall scope pushed into the code scan
-- as a pk IN (...) pre-filter, so :k_codes candidates come back whenever
-- that many memories are in scope.
knn_codes AS MATERIALIZED (
    SELECT pk FROM memory_vector_codes
    WHERE codes MATCH {{vector_codes}} AND k = :k_codes
      AND pk IN (SELECT m.pk FROM memories AS m WHERE {{recall_scope_filter}})
),
knn AS MATERIALIZED (
    SELECT c.pk, vec_distance_cosine(e.embedding, :query_vector) AS distance
    FROM knn_codes AS c JOIN memory_embeddings AS e ON e.pk = c.pk
    ORDER BY distance
    LIMIT :k
)
