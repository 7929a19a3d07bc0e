-- Recall's graph expansion: one undirected hop over typed edges from the given
-- memories (out along src, in along dst, each an index seek on one end of the
-- edge). No recursion: one hop reads each seed's edges once, never a path.
-- Returns every (seed, neighbour) with the newest edge between them.
WITH hop (seed, seed_rank, node, via_type, via_strength, via_updated, via_properties,
          via_direction) AS (
    SELECT m.pk, j.key, e.dst, e.type, e.strength, e.updated_at, e.properties, 'out'
    FROM json_each(:ids) AS j
    JOIN memories AS m ON m.id = j.value
    JOIN edges AS e ON e.src = m.pk
    WHERE e.type IN (SELECT value FROM json_each(:types)) AND e.dst <> m.pk
    UNION ALL
    SELECT m.pk, j.key, e.src, e.type, e.strength, e.updated_at, e.properties, 'in'
    FROM json_each(:ids) AS j
    JOIN memories AS m ON m.id = j.value
    JOIN edges AS e ON e.dst = m.pk
    WHERE e.type IN (SELECT value FROM json_each(:types)) AND e.src <> m.pk
),
ranked AS (
    SELECT h.*, row_number() OVER (
               PARTITION BY h.seed, h.node
               ORDER BY h.via_updated DESC) AS per_node,
           m.timestamp AS node_timestamp
    FROM hop AS h CROSS JOIN memories AS m ON m.pk = h.node  -- CROSS JOIN: hop drives
    WHERE m.type NOT IN (SELECT value FROM json_each(:excluded_types))
),
limited AS (
    SELECT r.*, row_number() OVER (
               PARTITION BY r.seed
               ORDER BY coalesce(r.via_updated, r.node_timestamp) DESC, r.node) AS per_seed
    FROM ranked AS r
    WHERE r.per_node = 1
)
SELECT s.id AS seed_id, l.seed_rank AS seed_rank, 1 AS depth,
       l.via_type AS relation_type, l.via_strength AS relation_strength,
       l.via_properties AS relation_properties, l.via_direction AS direction, m.*
FROM limited AS l
CROSS JOIN memories AS s ON s.pk = l.seed
CROSS JOIN memories AS m ON m.pk = l.node
WHERE l.per_seed <= :per_seed_limit
ORDER BY l.seed_rank, l.per_seed;
