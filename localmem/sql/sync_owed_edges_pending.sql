-- Edges still owed between the two stores :a and :b (either way), a bounded batch of them. Only
-- rows naming a memory id as text are read: a peer file's other rows are left, inert.
SELECT keeper, receiver, id FROM sync_owed_edges
WHERE ((keeper = :a AND receiver = :b) OR (keeper = :b AND receiver = :a))
  AND typeof(id) = 'text' AND length(id) <= 64
ORDER BY keeper, receiver, id
LIMIT :limit;
