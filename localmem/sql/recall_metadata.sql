-- Metadata sidecar prefilter: memories in scope whose metadata text contains
-- any of the query's value terms; Python scores the survivors.
SELECT m.* FROM memories AS m
WHERE {{recall_scope_filter}}
  AND m.metadata <> '{}'
  AND EXISTS (SELECT 1 FROM json_each(:terms) AS t WHERE instr(lower(m.metadata), t.value) > 0)
ORDER BY m.importance DESC, m.timestamp DESC
LIMIT :k;
