-- Every edge whose two ends are both among the given public ids.
SELECT s.id AS source, t.id AS target, e.type AS type, e.strength AS strength
FROM json_each(:ids) AS j
JOIN memories AS s ON s.id = j.value
JOIN edges AS e ON e.src = s.pk
JOIN memories AS t ON t.pk = e.dst
WHERE t.id IN (SELECT value FROM json_each(:ids))
ORDER BY s.id, e.type, t.id;
