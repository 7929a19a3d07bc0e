-- BM25 of the given memories (by pk) against the query; absent = no match.
SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
FROM memories_fts AS f
WHERE memories_fts MATCH :match
  AND f.rowid IN (SELECT value FROM json_each(:pks));
