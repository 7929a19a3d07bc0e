-- Metadata sidecar candidates: memories in scope having any of the query's
-- value terms in a whitelisted metadata field (an index lookup); Python
-- scores the survivors.
SELECT m.* FROM memories AS m
WHERE m.pk IN (SELECT t.pk FROM memory_metadata_terms AS t
               WHERE t.term IN (SELECT value FROM json_each(:terms)))
  AND {{scope}}
ORDER BY m.importance DESC, m.timestamp DESC
LIMIT :k;
