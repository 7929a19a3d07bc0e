-- What a push to :remote has to do, counted (for the progress bar and --dry-run).
SELECT
    (SELECT count(*) FROM memories AS m
     WHERE NOT EXISTS (SELECT 1 FROM push_ids AS p WHERE p.remote = :remote AND p.local_id = m.id)
     {{scope}}) AS to_create,
    (SELECT count(*) FROM push_ids AS p
     JOIN memories AS m ON m.id = p.local_id
     JOIN memory_changes AS c ON c.pk = m.pk
     WHERE p.remote = :remote AND p.remote_id IS NOT NULL AND c.seq > p.pushed_seq {{scope}}) AS to_update,
    (SELECT count(*) FROM push_ids AS p
     WHERE p.remote = :remote AND p.remote_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = p.local_id)) AS to_delete,
    (SELECT count(*) FROM push_ids AS p WHERE p.remote = :remote AND p.remote_id IS NULL) AS pending,
    (SELECT count(*) FROM push_ids AS p WHERE p.remote = :remote AND p.remote_id IS NOT NULL) AS mapped;
