-- Edges that cannot be sent: one of their memories is not on the server.
SELECT count(*) FROM edges AS e
JOIN memories AS s ON s.pk = e.src
JOIN memories AS d ON d.pk = e.dst
WHERE NOT EXISTS (SELECT 1 FROM push_ids AS p
                  WHERE p.remote = :remote AND p.local_id = s.id AND p.remote_id IS NOT NULL)
   OR NOT EXISTS (SELECT 1 FROM push_ids AS p
                  WHERE p.remote = :remote AND p.local_id = d.id AND p.remote_id IS NOT NULL);
