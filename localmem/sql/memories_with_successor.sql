-- Memories with an outgoing supersession edge (the only ones that can be superseded).
SELECT DISTINCT m.id FROM edges AS e
JOIN memories AS m ON m.pk = e.src
WHERE e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO');
