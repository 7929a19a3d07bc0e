-- Which of the given tag filters (tags or tag prefixes) some memory in the
-- context(s) carries.
SELECT t.value FROM json_each(:tags) AS t
WHERE EXISTS (
    SELECT 1 FROM memory_tag_prefixes AS p
    JOIN memories AS m ON m.pk = p.pk
    WHERE p.prefix = t.value AND m.archived = 0
      AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts))));
