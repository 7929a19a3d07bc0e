-- BM25 (content, tags, thread context columns; weights filled in from the
-- configuration) of the given memories (:pks, a JSON list) against the query.
-- `+rowid` keeps the list out of FTS5's plan: handed `rowid IN (...)`, FTS5
-- restarts the query once per listed row, and bm25 re-reads every term's
-- whole doclist each time; this way the MATCH runs once and bm25 is computed
-- only for the listed rows.
SELECT rowid, -bm25(memories_fts, {weights}) AS score
FROM memories_fts
WHERE memories_fts MATCH :match AND +rowid IN (SELECT value FROM json_each(:pks));
