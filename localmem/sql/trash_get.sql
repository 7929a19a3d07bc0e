SELECT id, record, edges, reason, trashed_at FROM trash WHERE id = :id;
