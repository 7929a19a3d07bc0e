-- For each given project tag (a JSON list of lowercased tags) that some memory carries:
-- how many memories carry it, and how many of those are current (not archived, not
-- superseded or expired at :now). Index lookups on memory_tags, one per tag.
SELECT t.tag AS tag, count(*) AS total,
       sum(m.archived = 0 AND (m.t_invalid IS NULL OR m.t_invalid > :now)) AS current
FROM memory_tags AS t JOIN memories AS m ON m.pk = t.pk
WHERE t.tag IN (SELECT value FROM json_each(:tags))
GROUP BY t.tag;
