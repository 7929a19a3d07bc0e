-- Memories one edge away (either direction, any type) from the given ones,
-- in the context(s), not archived and not in :exclude; strongest edge first.
SELECT seed_id, relation_type, strength, n.* FROM (
    SELECT s.id AS seed_id, e.type AS relation_type, e.strength AS strength, e.dst AS other
    FROM memories AS s JOIN edges AS e ON e.src = s.pk
    WHERE s.id IN (SELECT value FROM json_each(:ids))
    UNION ALL
    SELECT s.id, e.type, e.strength, e.src
    FROM memories AS s JOIN edges AS e ON e.dst = s.pk
    WHERE s.id IN (SELECT value FROM json_each(:ids))
) AS link
JOIN memories AS n ON n.pk = link.other
WHERE n.archived = 0
  AND n.id NOT IN (SELECT value FROM json_each(:exclude))
  AND (:contexts IS NULL OR n.context IN (SELECT value FROM json_each(:contexts)))
ORDER BY strength DESC, n.last_accessed ASC, n.id
LIMIT :limit;
