-- Version numbers: 1 + the length of the longest chain of predecessors
-- (incoming INVALIDATED_BY / EVOLVED_INTO edges) behind each given memory,
-- walked at most :max_depth steps (UNION keeps the walk finite on cycles).
WITH RECURSIVE walk (origin, node, depth) AS (
    SELECT m.pk, m.pk, 0 FROM memories AS m
    WHERE m.id IN (SELECT value FROM json_each(:ids))
    UNION
    SELECT w.origin, e.src, w.depth + 1
    FROM walk AS w
    JOIN edges AS e ON e.dst = w.node AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
    WHERE w.depth < :max_depth AND e.src <> w.origin
)
SELECT o.id AS id, max(w.depth) + 1 AS version
FROM walk AS w JOIN memories AS o ON o.pk = w.origin
GROUP BY w.origin;
