-- The shortest walk from :start to :target along supersession edges
-- (INVALIDATED_BY / EVOLVED_INTO, followed old -> new, newest or not), as a
-- comma-wrapped list of public ids; no row when :target cannot be reached.
-- Adding :target -> :start then closes a cycle. Nodes are never revisited on
-- one walk, and :max_depth bounds the work on a dense graph.
WITH RECURSIVE walk (node, depth, path) AS (
    SELECT m.pk, 0, ',' || m.id || ','
    FROM memories AS m
    WHERE m.pk = :start
    UNION ALL
    SELECT e.dst, w.depth + 1, w.path || t.id || ','
    FROM walk AS w
    JOIN edges AS e ON e.src = w.node
    JOIN memories AS t ON t.pk = e.dst
    WHERE w.depth < :max_depth
      AND w.node <> :target
      AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
      AND instr(w.path, ',' || t.id || ',') = 0
)
SELECT path FROM walk WHERE node = :target ORDER BY depth LIMIT 1;
