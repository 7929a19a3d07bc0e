-- Outgoing edge summaries for recall results, newest first, at most :limit per memory.
WITH ranked AS (
    SELECT s.id AS source_id, e.type AS relation_type, e.strength AS relation_strength,
           e.properties AS relation_properties, t.*,
           row_number() OVER (PARTITION BY e.src ORDER BY e.updated_at DESC, t.timestamp DESC) AS n
    FROM memories AS s
    JOIN edges AS e ON e.src = s.pk
    JOIN memories AS t ON t.pk = e.dst
    WHERE s.id IN (SELECT value FROM json_each(:ids))
)
SELECT * FROM ranked WHERE n <= :limit ORDER BY source_id, n;
