-- Keyword arm: FTS5 bm25 (content and thread-context columns; weights filled
-- in from the configuration) within the scope, best first; each hit also
-- gets its cosine to the query vector from the plain embedding copy.
SELECT m.*, -bm25(memories_fts, {weights}) AS bm25,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity
FROM memories_fts AS f
JOIN memories AS m ON m.pk = f.rowid
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE memories_fts MATCH :match AND {{kagura_scope_filter}}
ORDER BY bm25(memories_fts, {weights})
LIMIT :k;
