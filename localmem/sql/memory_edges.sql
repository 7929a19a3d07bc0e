-- Every edge at one memory, outgoing ('out': memory -> other) and incoming
-- ('in': other -> memory), with the other memory's id and summary; newest first.
SELECT 'out' AS direction, e.type AS type, e.strength AS strength, e.updated_at AS updated_at,
       e.properties AS properties,
       o.id AS other_id, o.summary AS other_summary, o.content AS other_content
FROM memories AS m
JOIN edges AS e ON e.src = m.pk
JOIN memories AS o ON o.pk = e.dst
WHERE m.id = :id
UNION ALL
SELECT 'in' AS direction, e.type AS type, e.strength AS strength, e.updated_at AS updated_at,
       e.properties AS properties,
       o.id AS other_id, o.summary AS other_summary, o.content AS other_content
FROM memories AS m
JOIN edges AS e ON e.dst = m.pk
JOIN memories AS o ON o.pk = e.src
WHERE m.id = :id
ORDER BY direction DESC, updated_at DESC, other_id, type;
