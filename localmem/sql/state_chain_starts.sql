-- Which of the given memories (:ids, a JSON list) have an outgoing
-- INVALIDATED_BY / EVOLVED_INTO edge: only their supersession chains need
-- walking (state_replacements.sql), and most memories have none. A cheap
-- first pass: two index probes per memory, against the walk's recursive step.
SELECT m.id FROM memories AS m
WHERE m.id IN (SELECT value FROM json_each(:ids))
  AND EXISTS (SELECT 1 FROM edges AS e
              WHERE e.src = m.pk AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO'));
