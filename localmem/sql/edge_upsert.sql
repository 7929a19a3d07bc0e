INSERT INTO edges (src, dst, type, strength, updated_at, properties)
VALUES (:src, :dst, :type, :strength, :updated_at, :properties)
ON CONFLICT (src, type, dst) DO UPDATE SET
    strength = excluded.strength,
    updated_at = excluded.updated_at,
    properties = excluded.properties;
