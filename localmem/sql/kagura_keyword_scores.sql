-- BM25 of the given memories (by pk) against the query; absent = no match.
-- `+f.rowid`: the list stays out of FTS5's plan (see recall_keyword_scores.sql).
SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
FROM memories_fts AS f
WHERE memories_fts MATCH :match
  AND +f.rowid IN (SELECT value FROM json_each(:pks));
