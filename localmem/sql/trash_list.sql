SELECT id, record, edges, reason, trashed_at FROM trash
ORDER BY trashed_at DESC, id
LIMIT :limit;
