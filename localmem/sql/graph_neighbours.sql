-- Undirected walk over typed edges from the given memories, up to :max_depth
-- hops, never revisiting a node. Two recursive selects (out along src, in
-- along dst) so each step is an index lookup on one end of the edge.
-- Returns every (seed, neighbour) with the last edge walked and its depth.
WITH RECURSIVE walk (seed, seed_rank, node, depth, path, via_type, via_strength,
                     via_updated, via_properties, via_direction) AS (
    SELECT m.pk, j.key, m.pk, 0, ',' || m.pk || ',', NULL, NULL, NULL, NULL, NULL
    FROM json_each(:ids) AS j
    JOIN memories AS m ON m.id = j.value
    UNION ALL
    SELECT w.seed, w.seed_rank, e.dst, w.depth + 1, w.path || e.dst || ',',
           e.type, e.strength, e.updated_at, e.properties, 'out'
    FROM walk AS w JOIN edges AS e ON e.src = w.node
    WHERE w.depth < :max_depth
      AND e.type IN (SELECT value FROM json_each(:types))
      AND instr(w.path, ',' || e.dst || ',') = 0
    UNION ALL
    SELECT w.seed, w.seed_rank, e.src, w.depth + 1, w.path || e.src || ',',
           e.type, e.strength, e.updated_at, e.properties, 'in'
    FROM walk AS w JOIN edges AS e ON e.dst = w.node
    WHERE w.depth < :max_depth
      AND e.type IN (SELECT value FROM json_each(:types))
      AND instr(w.path, ',' || e.src || ',') = 0
),
ranked AS (
    SELECT w.*, row_number() OVER (
               PARTITION BY w.seed, w.node
               ORDER BY w.depth, w.via_updated DESC) AS per_node,
           m.timestamp AS node_timestamp
    FROM walk AS w CROSS JOIN memories AS m ON m.pk = w.node  -- CROSS JOIN: walk drives
    WHERE w.depth > 0
      AND m.type NOT IN (SELECT value FROM json_each(:excluded_types))
),
limited AS (
    SELECT r.*, row_number() OVER (
               PARTITION BY r.seed
               ORDER BY coalesce(r.via_updated, r.node_timestamp) DESC, r.node) AS per_seed
    FROM ranked AS r
    WHERE r.per_node = 1
)
SELECT s.id AS seed_id, l.seed_rank AS seed_rank, l.depth AS depth,
       l.via_type AS relation_type, l.via_strength AS relation_strength,
       l.via_properties AS relation_properties, l.via_direction AS direction, m.*
FROM limited AS l
CROSS JOIN memories AS s ON s.pk = l.seed
CROSS JOIN memories AS m ON m.pk = l.node
WHERE l.per_seed <= :per_seed_limit
ORDER BY l.seed_rank, l.per_seed;
