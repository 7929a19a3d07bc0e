-- associate's look-up in one statement: the two memories' keys and the strength of their edge
-- of :type (NULL: none yet). No row: a memory does not exist (edge_ends says which).
SELECT a.pk, b.pk, e.strength
FROM memories AS a
JOIN memories AS b ON b.id = :second
LEFT JOIN edges AS e ON e.src = a.pk AND e.type = :type AND e.dst = b.pk
WHERE a.id = :first;
