-- The values of :remote_id's fields this pull took (hashes).
INSERT INTO pull_seen (remote, remote_id, fields) VALUES (:remote, :remote_id, :fields)
ON CONFLICT (remote, remote_id) DO UPDATE SET fields = excluded.fields;
