-- The edges at one memory, both directions, with the other end's local id.
SELECT e.type AS type, o.id AS other_id
FROM memories AS m
JOIN edges AS e ON e.src = m.pk
JOIN memories AS o ON o.pk = e.dst
WHERE m.id = :id
UNION ALL
SELECT e.type, o.id
FROM memories AS m
JOIN edges AS e ON e.dst = m.pk
JOIN memories AS o ON o.pk = e.src
WHERE m.id = :id;
