-- Keyword channel: FTS5 bm25 over content and thread context within the
-- scope (column weights filled in from the configuration). Only the top :k
-- hits are then joined to their rows and get their cosine to the query
-- vector from the plain embedding copy.
WITH hits AS MATERIALIZED (
    SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
    FROM memories_fts AS f
    JOIN memories AS m ON m.pk = f.rowid
    WHERE memories_fts MATCH :match AND {{scope}}
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
