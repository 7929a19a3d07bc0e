-- Import one edge by its endpoints' public ids, keeping its own strength,
-- updated_at and properties; any relation type (system ones such as
-- PRECEDED_BY included). Writes nothing when an endpoint is missing: the
-- caller checks changes().
INSERT INTO edges (src, dst, type, strength, updated_at, properties)
SELECT a.pk, b.pk, :relation_type, :strength, :updated_at, :properties
FROM memories AS a, memories AS b
WHERE a.id = :memory1_id AND b.id = :memory2_id
ON CONFLICT (src, type, dst) DO UPDATE SET
    strength = excluded.strength,
    updated_at = excluded.updated_at,
    properties = excluded.properties;
