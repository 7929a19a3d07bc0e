-- Outgoing supersession edges (INVALIDATED_BY / EVOLVED_INTO) of the given
-- memories, newest edge first per memory: the first row of each is its
-- direct successor.
SELECT s.id AS source_id, t.id AS successor_id, t.context AS successor_context,
       e.type AS relation_type
FROM memories AS s
JOIN edges AS e ON e.src = s.pk AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
JOIN memories AS t ON t.pk = e.dst
WHERE s.id IN (SELECT value FROM json_each(:ids))
ORDER BY s.id, e.updated_at DESC, t.timestamp DESC, t.pk;
