-- Fragment: CTE `knn (pk, distance)`, the :k nearest memories to
-- :query_vector by cosine, timestamps within [:ts_from, :ts_to] (unix
-- seconds; the whole range when there is no window). Hamming distance over
-- the codes picks :k_codes candidates (a few times :k), whose exact cosine
-- then comes from the plain float32 copy.
knn_codes AS MATERIALIZED (
    SELECT pk FROM memory_vector_codes
    WHERE codes MATCH {{vector_codes}} AND k = :k_codes
      AND ts >= :ts_from AND ts <= :ts_to
),
knn AS MATERIALIZED (
    SELECT c.pk, vec_distance_cosine(e.embedding, :query_vector) AS distance
    FROM knn_codes AS c JOIN memory_embeddings AS e ON e.pk = c.pk
    ORDER BY distance
    LIMIT :k
)
