-- related_tags' sample summary of the given memories (:pks, a JSON list).
SELECT m.pk, coalesce(m.summary, substr(m.content, 1, 240)) AS summary
FROM memories AS m
WHERE m.pk IN (SELECT value FROM json_each(:pks));
