-- The memories carrying each lowercased whole tag in :tags (a JSON list) within
-- the context(s), not archived: what related_tags counts and picks its sample
-- summary from (kagura_related_tags.sql answers the same for one clock).
SELECT t.tag AS tag, m.pk AS pk, m.updated_at AS updated_at, m.t_invalid AS t_invalid
FROM memory_tags AS t
JOIN memories AS m ON m.pk = t.pk
WHERE t.tag IN (SELECT value FROM json_each(:tags))
  AND m.archived = 0
  AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)));
