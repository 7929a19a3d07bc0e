-- The edges, as they are now, of the memories in :ids (a JSON list of ids), at either end,
-- with their stamps.
SELECT a.id AS src_id, e.type, b.id AS dst_id, e.strength, e.updated_at, e.properties, e.hlc
FROM memories AS m
JOIN edges AS e ON e.src = m.pk OR e.dst = m.pk
JOIN memories AS a ON a.pk = e.src
JOIN memories AS b ON b.pk = e.dst
WHERE m.id IN (SELECT value FROM json_each(:ids))
LIMIT :limit;
