-- GET /memories/{id}/related: the distinct memories within :max_depth hops
-- (undirected, given types), most important first.
WITH RECURSIVE walk (node, depth, path) AS (
    SELECT m.pk, 0, ',' || m.pk || ',' FROM memories AS m WHERE m.id = :id
    UNION ALL
    SELECT e.dst, w.depth + 1, w.path || e.dst || ','
    FROM walk AS w JOIN edges AS e ON e.src = w.node
    WHERE w.depth < :max_depth
      AND e.type IN (SELECT value FROM json_each(:types))
      AND instr(w.path, ',' || e.dst || ',') = 0
    UNION ALL
    SELECT e.src, w.depth + 1, w.path || e.src || ','
    FROM walk AS w JOIN edges AS e ON e.dst = w.node
    WHERE w.depth < :max_depth
      AND e.type IN (SELECT value FROM json_each(:types))
      AND instr(w.path, ',' || e.src || ',') = 0
),
nearest AS (
    SELECT node, min(depth) AS depth FROM walk WHERE depth > 0 GROUP BY node
)
SELECT n.depth AS depth, m.*
FROM nearest AS n JOIN memories AS m ON m.pk = n.node
WHERE m.id <> :id
ORDER BY m.importance DESC, m.timestamp DESC, m.id
LIMIT :limit;
