-- The server has this edge with this strength and these properties.
INSERT INTO push_edges (remote, src_id, type, dst_id, strength, properties)
VALUES (:remote, :src_id, :type, :dst_id, :strength, :properties)
ON CONFLICT (remote, src_id, type, dst_id) DO UPDATE SET
    strength = excluded.strength, properties = excluded.properties;
