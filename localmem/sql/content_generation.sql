-- What moves whenever a memory is written or deleted (not on recall's
-- last_accessed writes): schema 6's change counter, with the token a restore
-- writes (a restore takes the counter back; later writes can bring it to a
-- value a cache has seen).
SELECT seq, (SELECT value FROM meta WHERE key = 'restore_token') FROM sync_clock WHERE id = 1;
