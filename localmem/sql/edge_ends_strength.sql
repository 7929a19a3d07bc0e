-- associate's look-up in one statement: the two memories' keys (NULL: that memory does not exist;
-- edge_ends says which) and the strength of their edge of :type (NULL: none yet). Each key by its
-- own scalar subquery, not a join of memories with itself: the join took about 2.5 times as long
-- per call (benchmarks/speed/edge_log_costs.py, its look-up table).
SELECT k.src, k.dst, (SELECT strength FROM edges WHERE src = k.src AND type = :type AND dst = k.dst)
FROM (SELECT (SELECT pk FROM memories WHERE id = :first) AS src,
             (SELECT pk FROM memories WHERE id = :second) AS dst) AS k;
