-- Edges with an endpoint that is not a memory.
SELECT e.src, e.dst, e.type, a.id AS src_id, b.id AS dst_id
FROM edges AS e
LEFT JOIN memories AS a ON a.pk = e.src
LEFT JOIN memories AS b ON b.pk = e.dst
WHERE a.pk IS NULL OR b.pk IS NULL;
