-- Every tag and tag prefix used in the context(s), with how many memories carry it.
SELECT p.prefix AS tag, count(*) AS count
FROM memory_tag_prefixes AS p
JOIN memories AS m ON m.pk = p.pk
WHERE m.archived = 0
  AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)))
GROUP BY p.prefix
ORDER BY count DESC, p.prefix
LIMIT :limit;
