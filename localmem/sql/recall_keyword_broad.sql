-- Keyword channel without tags or a time window: the top :k FTS5 hits by
-- bm25 straight from the index (no row lookups while ranking), then the
-- few scope checks (archived, excluded types) on those rows.
WITH hits AS MATERIALIZED (
    SELECT rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
    FROM memories_fts
    WHERE memories_fts MATCH :match
    ORDER BY bm25(memories_fts, {weights})
    LIMIT :k
)
SELECT m.*, hits.bm25 AS bm25,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity
FROM hits
JOIN memories AS m ON m.pk = hits.pk
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE {{scope}}
ORDER BY hits.bm25 DESC;
