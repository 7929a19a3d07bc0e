INSERT INTO sync_peers (peer, sent_seq, last_sync) VALUES (:peer, :sent_seq, :now)
ON CONFLICT (peer) DO UPDATE SET sent_seq = max(sent_seq, excluded.sent_seq), last_sync = excluded.last_sync;
