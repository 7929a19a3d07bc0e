-- Kagura's keyword arm ranked from the index alone among the memories a tag or
-- context index listed (:among, a JSON list; the rest of the scope is checked
-- on the hits), plus the bm25 of listed memories (:listed, the semantic arm's
-- finds) from the same pass, as recall_keyword_broad_hits_listed.sql gives
-- them: the listed hits first (third column 1), then the best :k others.
SELECT rowid AS pk, -bm25(memories_fts, {weights}) AS bm25,
       +rowid IN (SELECT value FROM json_each(:listed)) AS listed
FROM memories_fts
WHERE memories_fts MATCH :match
  AND +rowid IN (SELECT value FROM json_each(:among))
ORDER BY listed DESC, bm25(memories_fts, {weights})
LIMIT :k + json_array_length(:listed);
