INSERT INTO sync_base (peer, id, version) VALUES (:peer, :id, :version)
ON CONFLICT (peer, id) DO UPDATE SET version = excluded.version;
