-- Keyword arm: FTS5 bm25 (content and thread-context columns; weights filled
-- in from the configuration) within the scope, best first. Only the top :k
-- hits are joined to their rows; each also gets its cosine to the query
-- vector from the plain embedding copy.
WITH hits AS MATERIALIZED (
    SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
    FROM memories_fts AS f
    JOIN memories AS m ON m.pk = f.rowid
    WHERE memories_fts MATCH :match AND {{kagura_scope_filter}}
    ORDER BY bm25(memories_fts, {weights})
    LIMIT :k
)
SELECT m.*, hits.bm25 AS bm25,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity
FROM hits
JOIN memories AS m ON m.pk = hits.pk
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
ORDER BY hits.bm25 DESC;
