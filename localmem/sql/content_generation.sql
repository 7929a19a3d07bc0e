-- What moves whenever a memory is written or deleted (not on recall's
-- last_accessed writes): schema 6's change counter.
SELECT seq FROM sync_clock WHERE id = 1;
