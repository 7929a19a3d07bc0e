-- CONTRADICTS edges of the given memories, either direction, to memories in
-- the context(s) that are not archived; newest edge first.
SELECT source_id, other_id FROM (
    SELECT s.id AS source_id, o.id AS other_id, e.updated_at AS updated_at
    FROM memories AS s
    JOIN edges AS e ON e.src = s.pk AND e.type = 'CONTRADICTS'
    JOIN memories AS o ON o.pk = e.dst
    WHERE s.id IN (SELECT value FROM json_each(:ids)) AND o.archived = 0
      AND (:contexts IS NULL OR o.context IN (SELECT value FROM json_each(:contexts)))
    UNION ALL
    SELECT s.id, o.id, e.updated_at
    FROM memories AS s
    JOIN edges AS e ON e.dst = s.pk AND e.type = 'CONTRADICTS'
    JOIN memories AS o ON o.pk = e.src
    WHERE s.id IN (SELECT value FROM json_each(:ids)) AND o.archived = 0
      AND (:contexts IS NULL OR o.context IN (SELECT value FROM json_each(:contexts)))
)
ORDER BY source_id, updated_at DESC, other_id;
