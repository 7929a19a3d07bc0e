-- Metadata sidecar candidates when the query's value terms are common (in
-- thousands of memories): the same rows as recall_metadata.sql, found by
-- walking memories in importance order and stopping at :k, instead of
-- gathering every memory that has a term and sorting them.
SELECT m.* FROM memories AS m INDEXED BY memories_importance
WHERE EXISTS (SELECT 1 FROM memory_metadata_terms AS t
              WHERE t.pk = m.pk AND t.term IN (SELECT value FROM json_each(:terms)))
  AND {{scope}}
ORDER BY m.importance DESC, m.timestamp DESC
LIMIT :k;
