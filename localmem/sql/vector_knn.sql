-- Fragment: CTE `knn (pk, distance)`, the :k nearest memories to
-- :query_vector by cosine among :code_hits, the candidates the in-memory
-- code scan chose (a JSON array of pks; storage/code_search.py), whose
-- exact cosine comes from the plain float32 copy.
knn AS MATERIALIZED (
    SELECT e.pk, vec_distance_cosine(e.embedding, :query_vector) AS distance
    FROM json_each(:code_hits) AS c JOIN memory_embeddings AS e ON e.pk = c.value
    ORDER BY distance
    LIMIT :k
)
