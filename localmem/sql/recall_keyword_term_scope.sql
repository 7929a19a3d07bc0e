-- One keyword's bm25 (content, tags and thread context columns; weights filled
-- in from the configuration) for every memory in a narrowed scope that holds
-- it. FTS5 adds up a MATCH of several keywords one keyword after another, so
-- these values, summed in the query's keyword order, are the bm25 of the whole
-- query to the last bit (recall/keyword_tables.py).
SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25
FROM memories_fts AS f
JOIN memories AS m ON m.pk = f.rowid
WHERE memories_fts MATCH :match AND {{scope}};
