-- Keyword channel hits without tags or a time window, as
-- recall_keyword_broad_hits.sql, plus the bm25 of listed memories (:listed, a
-- JSON list of pks: what the other channels found) from the same pass, since
-- ranking computes every hit's bm25 anyway and a second MATCH would read the
-- terms' doclists again. The listed hits come first (third column 1), then the
-- best :k of the others; the caller merges the two into the top :k (ties in
-- rowid order, as the ranking statement gives them).
SELECT rowid AS pk, -bm25(memories_fts, {weights}) AS bm25,
       +rowid IN (SELECT value FROM json_each(:listed)) AS listed
FROM memories_fts
WHERE memories_fts MATCH :match
ORDER BY listed DESC, bm25(memories_fts, {weights})
LIMIT :k + json_array_length(:listed);
