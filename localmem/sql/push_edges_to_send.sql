-- Edges whose two memories the server has, and that it has not got in this
-- version (new, or strength or properties changed since).
SELECT s.id AS src_id, d.id AS dst_id, e.type AS type, e.strength AS strength,
       e.properties AS properties, ps.remote_id AS src_remote, pd.remote_id AS dst_remote,
       pe.remote IS NOT NULL AS known
FROM edges AS e
JOIN memories AS s ON s.pk = e.src
JOIN memories AS d ON d.pk = e.dst
JOIN push_ids AS ps ON ps.remote = :remote AND ps.local_id = s.id AND ps.remote_id IS NOT NULL
JOIN push_ids AS pd ON pd.remote = :remote AND pd.local_id = d.id AND pd.remote_id IS NOT NULL
LEFT JOIN push_edges AS pe
       ON pe.remote = :remote AND pe.src_id = s.id AND pe.type = e.type AND pe.dst_id = d.id
WHERE pe.remote IS NULL OR pe.strength IS NOT e.strength OR pe.properties IS NOT e.properties
ORDER BY e.src, e.type, e.dst;
