SELECT token FROM sync_pair_tokens WHERE peer = :peer;
