INSERT INTO sync_pair_tokens (peer, token) VALUES (:peer, :token)
ON CONFLICT (peer) DO UPDATE SET token = excluded.token;
