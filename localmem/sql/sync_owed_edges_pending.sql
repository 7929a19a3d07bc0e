-- Edges still owed between the two stores :a and :b (either way), a bounded batch of them.
SELECT keeper, receiver, id FROM sync_owed_edges
WHERE (keeper = :a AND receiver = :b) OR (keeper = :b AND receiver = :a)
ORDER BY keeper, receiver, id
LIMIT :limit;
