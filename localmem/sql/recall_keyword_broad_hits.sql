-- Keyword channel hits without tags or a time window: the top :k FTS5 hits
-- by bm25 straight from the index (no row lookups while ranking), best first;
-- recall_keyword_rows.sql applies the few scope checks afterwards.
SELECT rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
FROM memories_fts
WHERE memories_fts MATCH :match
ORDER BY bm25(memories_fts, {weights})
LIMIT :k;
