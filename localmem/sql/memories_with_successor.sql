-- Memories with an outgoing supersession edge (the only ones that can be superseded), and
-- whether the successor the chain walk takes first (state_replacements: newest edge first)
-- is current by its own columns: then the walk finds a current memory at its first hop, and
-- only the others need walking.
SELECT m.id,
       (SELECT t.archived = 0
               AND (t.t_valid IS NULL OR t.t_valid <= :now)
               AND (t.t_invalid IS NULL OR t.t_invalid > :now)
        FROM edges AS e2
        JOIN memories AS t ON t.pk = e2.dst
        WHERE e2.src = m.pk AND e2.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
        ORDER BY e2.updated_at DESC, t.timestamp DESC, e2.dst
        LIMIT 1) AS first_hop_current
FROM memories AS m
WHERE EXISTS (SELECT 1 FROM edges AS e
              WHERE e.src = m.pk AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO'));
