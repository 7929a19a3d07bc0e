SELECT sent_seq FROM sync_peers WHERE peer = :peer;
