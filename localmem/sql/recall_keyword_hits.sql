-- Keyword channel hits within a narrowed scope (tags or a time window): the
-- top :k FTS5 hits by bm25 over content and thread context (column weights
-- filled in from the configuration), best first.
SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
FROM memories_fts AS f
JOIN memories AS m ON m.pk = f.rowid
WHERE memories_fts MATCH :match AND {{scope}}
ORDER BY bm25(memories_fts, {weights})
LIMIT :k;
