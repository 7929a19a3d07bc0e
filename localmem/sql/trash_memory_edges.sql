SELECT a.id AS src_id, e.type, b.id AS dst_id, e.strength, e.updated_at, e.properties
FROM edges AS e JOIN memories AS a ON a.pk = e.src JOIN memories AS b ON b.pk = e.dst
WHERE e.src = :pk OR e.dst = :pk;
