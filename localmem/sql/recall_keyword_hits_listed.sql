-- Keyword channel hits within a narrowed scope, as recall_keyword_hits.sql,
-- plus the bm25 of listed memories (:listed, a JSON list of pks: what the
-- other channels found) from the same MATCH pass, since ranking the hits in
-- scope computes their bm25 anyway. Third column 1: one of the top :k hits,
-- best first; 0: a listed memory that matches (one that does not is absent).
WITH scored AS MATERIALIZED (
    SELECT f.rowid AS pk, -bm25(memories_fts, {weights}) AS bm25, ({{scope}}) AS in_scope
    FROM memories_fts AS f
    JOIN memories AS m ON m.pk = f.rowid
    WHERE memories_fts MATCH :match
      AND (({{scope}}) OR f.rowid IN (SELECT value FROM json_each(:listed)))
)
SELECT * FROM (SELECT pk, bm25, 1 AS top FROM scored WHERE in_scope ORDER BY bm25 DESC LIMIT :k)
UNION ALL
SELECT pk, bm25, 0 AS top FROM scored WHERE pk IN (SELECT value FROM json_each(:listed));
