-- The given memories (:pks) and every memory up to three places before or
-- after one of them in its thread segment: the rows whose full-text context
-- a write to the given memories changes.
WITH targets AS (
    SELECT pk, thread FROM memories WHERE pk IN (SELECT value FROM json_each(:pks))
),
{{thread_segments}},
positioned AS (
    SELECT s.pk, s.thread, s.segment,
           row_number() OVER (PARTITION BY s.thread, s.segment ORDER BY s.timestamp, s.pk) AS position
    FROM segmented AS s
)
SELECT DISTINCT p.pk
FROM positioned AS t
JOIN positioned AS p
  ON p.thread = t.thread AND p.segment = t.segment AND abs(p.position - t.position) <= 3
WHERE t.pk IN (SELECT value FROM json_each(:pks));
