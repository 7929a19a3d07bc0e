-- One local edge as push_edges records it.
SELECT s.id AS src_id, e.type AS type, d.id AS dst_id, e.strength AS strength, e.properties AS properties
FROM edges AS e
JOIN memories AS s ON s.pk = e.src
JOIN memories AS d ON d.pk = e.dst
WHERE s.id = :src_id AND d.id = :dst_id AND e.type = :type;
