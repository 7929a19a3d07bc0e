-- Supersession chains: from each given memory, follow outgoing INVALIDATED_BY /
-- EVOLVED_INTO edges (newest edge first, one edge per step) for at most 5
-- hops, never revisiting a node (cycle-safe). Every node reached is returned
-- with its depth; the caller picks the deepest one that is current. Only a
-- memory with an outgoing supersession edge starts a walk: most have none, and
-- two index probes each keep them out of the recursion.
WITH RECURSIVE walk (origin, node, depth, path, first_type, first_strength) AS (
    SELECT m.pk, m.pk, 0, ',' || m.pk || ',', NULL, NULL
    FROM memories AS m
    WHERE m.id IN (SELECT value FROM json_each(:ids))
      AND EXISTS (SELECT 1 FROM edges AS s
                  WHERE s.src = m.pk AND s.type IN ('INVALIDATED_BY', 'EVOLVED_INTO'))
    UNION ALL
    SELECT w.origin, e.dst, w.depth + 1, w.path || e.dst || ',',
           coalesce(w.first_type, e.type), coalesce(w.first_strength, e.strength)
    FROM walk AS w
    JOIN edges AS e ON e.src = w.node
    WHERE w.depth < :max_depth
      AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
      AND e.dst = (
          SELECT e2.dst FROM edges AS e2
          JOIN memories AS t ON t.pk = e2.dst
          WHERE e2.src = w.node
            AND e2.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
            AND instr(w.path, ',' || e2.dst || ',') = 0
          ORDER BY e2.updated_at DESC, t.timestamp DESC, e2.dst
          LIMIT 1)
)
SELECT o.id AS origin_id, w.depth AS depth, w.first_type AS relation_type,
       w.first_strength AS relation_strength, m.*
FROM walk AS w
JOIN memories AS o ON o.pk = w.origin
JOIN memories AS m ON m.pk = w.node
WHERE w.depth > 0
ORDER BY o.id, w.depth;
