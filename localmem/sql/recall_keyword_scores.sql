-- BM25 (content, tags, thread context columns; weights filled in from the
-- configuration) of the given memories (:pks, a JSON list) against the query.
SELECT rowid, -bm25(memories_fts, {weights}) AS score
FROM memories_fts
WHERE memories_fts MATCH :match AND rowid IN (SELECT value FROM json_each(:pks));
