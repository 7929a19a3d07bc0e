-- kagura_near_duplicates.sql's ranking straight from the index (no memories
-- row read per hit): the :k best bm25 hits of :match in the whole store
-- (column weights filled in: content only), best first.
SELECT rowid AS pk
FROM memories_fts
WHERE memories_fts MATCH :match
ORDER BY bm25(memories_fts, {weights})
LIMIT :k;
