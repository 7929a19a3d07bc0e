-- Keyword channel in one statement (Kagura's keyword arm): the top :k hits
-- of recall_keyword_hits.sql joined to their rows, with their cosine to the
-- query vector from the plain embedding copy.
WITH hits AS MATERIALIZED ({{recall_keyword_hits}})
SELECT m.*, hits.bm25 AS bm25,
       CASE WHEN :query_vector IS NULL OR e.embedding IS NULL THEN NULL
            ELSE 1.0 - vec_distance_cosine(e.embedding, :query_vector) END AS similarity
FROM hits
JOIN memories AS m ON m.pk = hits.pk
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
ORDER BY hits.bm25 DESC;
