-- Export: every edge by its endpoints' public ids, in an order that does not
-- depend on integer keys (so export -> import -> export is byte-identical).
SELECT a.id AS memory1_id, b.id AS memory2_id, e.type AS relation_type,
       e.strength, e.updated_at, e.properties
FROM edges AS e
JOIN memories AS a ON a.pk = e.src
JOIN memories AS b ON b.pk = e.dst
ORDER BY a.id, e.type, b.id;
