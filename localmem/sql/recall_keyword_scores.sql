-- BM25 (content, tags, thread context columns; weights filled in from the
-- configuration) of the given memories against the query.
SELECT m.id, -bm25(memories_fts, {weights}) AS score
FROM memories_fts AS f
JOIN memories AS m ON m.pk = f.rowid
WHERE memories_fts MATCH :match
  AND f.rowid IN (SELECT m2.pk FROM memories AS m2 WHERE m2.id IN (SELECT value FROM json_each(:ids)));
