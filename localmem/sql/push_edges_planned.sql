-- For --dry-run: the edges a push would send (new or changed, between memories the
-- server has or that the push would create), and those it could not (an end outside).
SELECT
    sum(CASE WHEN sendable THEN 1 ELSE 0 END) AS to_send,
    sum(CASE WHEN sendable THEN 0 ELSE 1 END) AS unsendable
FROM (
    SELECT (EXISTS (SELECT 1 FROM push_ids AS p WHERE p.remote = :remote AND p.local_id = s.id
                    AND p.remote_id IS NOT NULL)
            OR EXISTS (SELECT 1 FROM memories AS m WHERE m.pk = s.pk {{scope}}))
       AND (EXISTS (SELECT 1 FROM push_ids AS p WHERE p.remote = :remote AND p.local_id = d.id
                    AND p.remote_id IS NOT NULL)
            OR EXISTS (SELECT 1 FROM memories AS m WHERE m.pk = d.pk {{scope}})) AS sendable
    FROM edges AS e
    JOIN memories AS s ON s.pk = e.src
    JOIN memories AS d ON d.pk = e.dst
    LEFT JOIN push_edges AS pe
           ON pe.remote = :remote AND pe.src_id = s.id AND pe.type = e.type AND pe.dst_id = d.id
    WHERE pe.remote IS NULL OR pe.strength IS NOT e.strength OR pe.properties IS NOT e.properties
);
