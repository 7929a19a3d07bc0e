INSERT INTO trash (id, record, edges, reason, trashed_at)
VALUES (:id, :record, :edges, :reason, :trashed_at)
ON CONFLICT (id) DO UPDATE SET record = excluded.record, edges = excluded.edges,
    reason = excluded.reason, trashed_at = excluded.trashed_at;
