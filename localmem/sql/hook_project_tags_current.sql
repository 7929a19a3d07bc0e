-- Which of the given project tags (a JSON list of lowercased tags) some current memory
-- carries (not archived, not superseded or expired at :now). Each EXISTS stops at the first
-- such memory, so the cost does not grow with the project (the prompt hook runs this).
SELECT j.value AS tag FROM json_each(:tags) AS j
WHERE EXISTS (SELECT 1 FROM memory_tags AS t JOIN memories AS m ON m.pk = t.pk
              WHERE t.tag = j.value AND m.archived = 0 AND (m.t_invalid IS NULL OR m.t_invalid > :now));
