-- Near-duplicate candidates of one memory (:pk): the :k memories of its
-- context that share most of its rarest words (FTS5 bm25; column weights
-- filled in: content only), with their cosine to it, kept at or above
-- :threshold.
WITH hits AS MATERIALIZED (
    SELECT f.rowid AS pk
    FROM memories_fts AS f
    JOIN memories AS m ON m.pk = f.rowid
    WHERE memories_fts MATCH :match AND m.context = :context AND m.archived = 0 AND f.rowid <> :pk
    ORDER BY bm25(memories_fts, {weights})
    LIMIT :k
)
SELECT hits.pk AS pk, 1.0 - vec_distance_cosine(e.embedding, me.embedding) AS similarity
FROM hits
JOIN memory_embeddings AS e ON e.pk = hits.pk
JOIN memory_embeddings AS me ON me.pk = :pk
WHERE 1.0 - vec_distance_cosine(e.embedding, me.embedding) >= :threshold;
